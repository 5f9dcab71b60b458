// Command render prints a Helm chart's manifests as one YAML stream, the way
// `helm template` would, without a helm binary or a cluster. It lives in its
// own module so Helm's dependencies stay out of the provider's go.mod;
// cluster/local/crossplane.sh builds it once and caches the binary.
//
//	render -chart DIR [-values FILE] [-namespace NS] [-release NAME] [-kube-version V]
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
)

type options struct {
	chart, values, namespace, release, kubeVersion string
	crds                                           bool
}

func main() {
	var o options
	flag.StringVar(&o.chart, "chart", "", "chart directory or archive")
	flag.StringVar(&o.values, "values", "", "YAML file of values; the chart's values.yaml fills the rest")
	flag.StringVar(&o.namespace, "namespace", "crossplane-system", "release namespace")
	flag.StringVar(&o.release, "release", "crossplane", "release name")
	flag.StringVar(&o.kubeVersion, "kube-version", "v1.35.3", "Kubernetes version the templates see as .Capabilities.KubeVersion")
	flag.BoolVar(&o.crds, "include-crds", true, "print the chart's crds/ files first")
	flag.Parse()
	if o.chart == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := render(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func render(w io.Writer, o options) error {
	ch, err := loader.Load(o.chart)
	if err != nil {
		return err
	}
	vals := chartutil.Values{}
	if o.values != "" {
		if vals, err = chartutil.ReadValuesFile(o.values); err != nil {
			return err
		}
	}
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(o.kubeVersion)
	if err != nil {
		return err
	}
	caps.KubeVersion = *kv
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kv.String()) {
		return fmt.Errorf("chart requires Kubernetes %s, not %s", c, kv)
	}
	// Subcharts switched off by conditions or tags must not render.
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return err
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: o.release, Namespace: o.namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return err
	}
	// Hooks run at points of a release's life that a one-shot apply does
	// not have; printing them as plain objects would change what they mean.
	if len(hooks) > 0 {
		return fmt.Errorf("%d hook(s), e.g. %s: hooks are not supported", len(hooks), hooks[0].Path)
	}
	var b bytes.Buffer
	if o.crds {
		for _, crd := range crdFiles(ch) {
			fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", crd.Name, bytes.TrimSpace(crd.Data))
		}
	}
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, strings.TrimSpace(m.Content))
	}
	if b.Len() == 0 {
		return errors.New("the chart rendered no objects")
	}
	_, err = w.Write(b.Bytes())
	return err
}

// crdFiles are the YAML files under crds/ of the chart and its enabled
// subcharts, which Helm installs as they are, without templating.
func crdFiles(ch *chart.Chart) []*chart.File {
	var out []*chart.File
	for _, o := range ch.CRDObjects() {
		if ext := path.Ext(o.Filename); ext == ".yaml" || ext == ".yml" {
			out = append(out, o.File)
		}
	}
	return out
}
