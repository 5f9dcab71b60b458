package okg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

// The namespaces the managers run in: those their own manifests use, and
// the defaults under which each looks for its webhook Service.
const (
	KruiseNamespace = "kruise-system"
	GameNamespace   = "kruise-game-system"
)

// webhookPort is where both managers serve their webhooks (their default).
const webhookPort = 9876

// The CRDs installed, read from the modules: all of kruise's, as its chart
// installs them (kruise-manager indexes some of its kinds unconditionally
// at start, ImagePullJob among them), and OKG's two kinds. The kinds
// nobody creates cost their controllers only an informer.
func gameCRDs() []string {
	return []string{"game.kruise.io_gameservers.yaml", "game.kruise.io_gameserversets.yaml"}
}

// kruiseFeatureGates turns off what needs kruise-daemon or a Pod webhook:
// the Advanced StatefulSet needs neither.
const kruiseFeatureGates = "PodWebhook=false,KruiseDaemon=false"

// gameConfig is kruise-game-manager's cloud provider configuration: only
// the TencentCloud provider, whose TencentCloud-CLB plugin writes
// tke-extend's Pod annotations.
const gameConfig = "[tencentcloud]\nenable = true\n"

// Options say where Install puts the managers.
type Options struct {
	// Registry is the node's image registry (host:port on loopback).
	Registry string
	// Wait bounds each wait; 0 means 4 minutes.
	Wait time.Duration
	// Log gets the Go builds' output; nil discards it.
	Log io.Writer
}

// Timing is how long a step of Install took.
type Timing struct {
	Step string
	Took time.Duration
}

// Install builds (or takes from the cache) both managers, pushes their
// images, installs the CRDs, and runs the managers until their Deployments
// are available, which means their webhooks serve. It returns each step's
// time.
func Install(ctx context.Context, kube client.Client, o Options) ([]Timing, error) {
	if o.Wait == 0 {
		o.Wait = 4 * time.Minute
	}
	var (
		bins    Binaries
		timings []Timing
	)
	steps := []struct {
		name string
		fn   func() error
	}{
		{fmt.Sprintf("build kruise %s and kruise-game %s (cached)", KruiseVersion, GameVersion), func() (err error) {
			bins, err = Build(ctx, o.Log)
			return err
		}},
		{"CRDs from the module cache", func() error { return installCRDs(ctx, kube, o.Wait) }},
		{"images pushed to the node's registry", func() error { return pushImages(ctx, o.Registry, bins) }},
		{"kruise-manager and kruise-game-manager available", func() error {
			if err := runManagers(ctx, kube, o.Registry); err != nil {
				return err
			}
			return waitAvailable(ctx, kube, o.Wait,
				client.ObjectKey{Namespace: KruiseNamespace, Name: KruiseManager},
				client.ObjectKey{Namespace: GameNamespace, Name: GameManager})
		}},
	}
	for _, s := range steps {
		began := time.Now()
		err := s.fn()
		timings = append(timings, Timing{Step: s.name, Took: time.Since(began)})
		if err != nil {
			return timings, fmt.Errorf("OpenKruiseGame: %s: %w", s.name, err)
		}
	}
	return timings, nil
}

// Image is the reference of a manager's image in the node's registry.
func Image(registry, name string) string {
	v := KruiseVersion
	if name == GameManager {
		v = GameVersion
	}
	return registry + "/okg/" + name + ":" + v
}

func installCRDs(ctx context.Context, kube client.Client, wait time.Duration) error {
	kruise, err := ModuleDir(ctx, KruiseModule, KruiseVersion)
	if err != nil {
		return err
	}
	game, err := ModuleDir(ctx, GameModule, GameVersion)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(kruise, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s/config/crd/bases", kruise)
	}
	for _, f := range gameCRDs() {
		files = append(files, filepath.Join(game, "config", "crd", "bases", f))
	}
	var names []string
	for _, f := range files {
		objs, err := testenv.Apply(ctx, kube, f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			names = append(names, o.GetName())
		}
	}
	return testenv.Eventually(ctx, wait, func() error {
		for _, n := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := kube.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				return err
			}
			if !slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
			}) {
				return errors.New("CRD " + n + " not established")
			}
		}
		return nil
	})
}

func pushImages(ctx context.Context, registry string, bins Binaries) error {
	for _, m := range []struct {
		name, bin string
		files     []xpkgbuild.File
	}{
		{KruiseManager, bins.Kruise, nil},
		{GameManager, bins.Game, []xpkgbuild.File{{Path: "/etc/kruise-game/config.toml", Data: []byte(gameConfig)}}},
	} {
		b, err := os.ReadFile(m.bin) //nolint:gosec // G304: our own cache.
		if err != nil {
			return err
		}
		img, err := xpkgbuild.BinaryImage(xpkgbuild.BinaryOptions{
			Binary: b, Name: m.name, Files: m.files, CreatedBy: "okg: go build " + m.name,
		})
		if err != nil {
			return err
		}
		if err := xpkgbuild.Push(ctx, img, Image(registry, m.name)); err != nil {
			return err
		}
	}
	return nil
}

// runManagers creates what the managers run with. Each manager writes its
// own serving certificate and puts its CA in its webhook configurations;
// kruise-manager fills configurations it finds, so they are created here
// with only the Advanced StatefulSet's webhooks from kruise's manifests
// (the others it serves stay unregistered).
func runManagers(ctx context.Context, kube client.Client, registry string) error {
	hooks, err := kruiseWebhookTemplates(ctx)
	if err != nil {
		return err
	}
	var objs []client.Object
	for _, m := range []struct {
		ns, name string
		args     []string
		env      []corev1.EnvVar
		ready    corev1.ProbeHandler
	}{
		{
			ns: KruiseNamespace, name: KruiseManager,
			args: []string{"--enable-leader-election=false", "--enable-pprof=false", "--feature-gates=" + kruiseFeatureGates},
			env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"},
			}}},
			// Its readyz includes its webhook's readiness.
			ready: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8000)}},
		},
		{
			ns: GameNamespace, name: GameManager,
			args:  []string{"--leader-elect=false", "--provider-config=/etc/kruise-game/config.toml"},
			ready: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(webhookPort)}},
		},
	} {
		labels := map[string]string{"app": m.name}
		objs = append(objs,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: m.ns}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: m.name}},
			// The test cluster's shortcut: their charts carry narrower roles.
			&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "okg-test-" + m.name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: m.ns, Name: m.name}},
			},
			&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: webhookService(m.name)},
				Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{
					Port: 443, TargetPort: intstr.FromInt32(webhookPort), Protocol: corev1.ProtocolTCP,
				}}},
			},
			&appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: m.ns, Name: m.name},
				Spec: appsv1.DeploymentSpec{
					Replicas: ptr.To[int32](1),
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{
							ServiceAccountName: m.name,
							Containers: []corev1.Container{{
								Name: "manager", Image: Image(registry, m.name), Args: m.args, Env: m.env,
								Ports:          []corev1.ContainerPort{{Name: "webhook", ContainerPort: webhookPort}},
								ReadinessProbe: &corev1.Probe{ProbeHandler: m.ready, PeriodSeconds: 2},
								// Both write their webhook certificates under /tmp;
								// kruise-manager also its protection log to /log.
								VolumeMounts: []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}, {Name: "log", MountPath: "/log"}},
							}},
							Volumes: []corev1.Volume{
								{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
								{Name: "log", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
							},
						},
					},
				},
			})
		if m.name == KruiseManager {
			objs = append(objs, hooks...)
		}
	}
	for _, o := range objs {
		if err := kube.Create(ctx, o); err != nil && !kerrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// webhookService is the Service each manager's webhook configurations name.
func webhookService(manager string) string {
	if manager == KruiseManager {
		return "kruise-webhook-service"
	}
	return "kruise-game-webhook-service"
}

// kruiseWebhookTemplates are kruise's webhook configurations as its
// install names them, with only the Advanced StatefulSet's webhooks of
// its generated manifests.
func kruiseWebhookTemplates(ctx context.Context) ([]client.Object, error) {
	dir, err := ModuleDir(ctx, KruiseModule, KruiseVersion)
	if err != nil {
		return nil, err
	}
	objs, err := testenv.ReadYAML(filepath.Join(dir, "config", "webhook", "manifests.yaml"))
	if err != nil {
		return nil, err
	}
	return StatefulSetWebhooks(objs)
}

// StatefulSetWebhooks keeps, of kruise's generated webhook configurations,
// the webhooks of apps.kruise.io statefulsets, under the names
// kruise-manager looks for. It is an error if one kind has none.
func StatefulSetWebhooks(objs []*unstructured.Unstructured) ([]client.Object, error) {
	names := map[string]string{
		"MutatingWebhookConfiguration":   "kruise-mutating-webhook-configuration",
		"ValidatingWebhookConfiguration": "kruise-validating-webhook-configuration",
	}
	var out []client.Object
	for _, o := range objs {
		name, ok := names[o.GetKind()]
		if !ok {
			continue
		}
		hooks, _, err := unstructured.NestedSlice(o.Object, "webhooks")
		if err != nil {
			return nil, err
		}
		var kept []any
		for _, h := range hooks {
			if m, ok := h.(map[string]any); ok && forKruiseStatefulSets(m) {
				kept = append(kept, m)
			}
		}
		if len(kept) == 0 {
			return nil, fmt.Errorf("kruise's %s has no webhook for apps.kruise.io statefulsets", o.GetKind())
		}
		c := o.DeepCopy()
		c.SetName(name)
		if err := unstructured.SetNestedSlice(c.Object, kept, "webhooks"); err != nil {
			return nil, err
		}
		out = append(out, c)
		delete(names, o.GetKind())
	}
	if len(names) != 0 {
		return nil, fmt.Errorf("kruise's webhook manifests lack %v", names)
	}
	return out, nil
}

func forKruiseStatefulSets(hook map[string]any) bool {
	rules, _, _ := unstructured.NestedSlice(hook, "rules")
	for _, r := range rules {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		groups, _, _ := unstructured.NestedStringSlice(m, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(m, "resources")
		if slices.Contains(groups, "apps.kruise.io") && slices.Contains(resources, "statefulsets") {
			return true
		}
	}
	return false
}

func waitAvailable(ctx context.Context, kube client.Client, wait time.Duration, keys ...client.ObjectKey) error {
	return testenv.Eventually(ctx, wait, func() error {
		for _, k := range keys {
			d := &appsv1.Deployment{}
			if err := kube.Get(ctx, k, d); err != nil {
				return err
			}
			if d.Status.AvailableReplicas < 1 || d.Status.UpdatedReplicas < 1 {
				return fmt.Errorf("deployment %s: %d available", k, d.Status.AvailableReplicas)
			}
		}
		return nil
	})
}
