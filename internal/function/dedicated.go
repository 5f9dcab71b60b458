package function

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/crossplane/function-sdk-go/resource/composite"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
)

// Defaults of DedicatedCLBService, as tke-extend-network-controller has them.
const (
	dedicatedDefaultMinPort = 500
	dedicatedDefaultMaxPort = 50000
	// dedicatedMaxAutoCreated bounds the load balancers lbAutoCreate
	// creates. tke-extend-network-controller had no bound; a PortPool
	// creates at most this many.
	dedicatedMaxAutoCreated = 100
)

// dedicatedCLBServiceSpec reads a DedicatedCLBService (or
// XDedicatedCLBService) and says what it means as a PodPublicAddress. The
// warnings name what is accepted but not honoured.
func dedicatedCLBServiceSpec(xr *composite.Unstructured) (*PodPublicAddressSpec, []string, error) {
	d := &DedicatedCLBServiceSpec{}
	if err := specInto(xr, d); err != nil {
		return nil, nil, err
	}
	return fromDedicated(d)
}

// fromDedicated maps a DedicatedCLBService spec:
//   - lbRegion → region; minPort/maxPort → portRange;
//   - maxPod (Pods per load balancer) → the end of the port range, since
//     every port of every Pod takes one port of the pool;
//   - selector → matchLabels; ports → ports (addressPodAnnotation →
//     addressAnnotation);
//   - listenerExtensiveParameters → the pool's listener settings;
//   - existedLbIds → loadBalancers.existingIds;
//   - lbAutoCreate → loadBalancers.autoCreate with a template from
//     extensiveParameters.
func fromDedicated(d *DedicatedCLBServiceSpec) (*PodPublicAddressSpec, []string, error) {
	var warnings []string
	s := &PodPublicAddressSpec{
		Selector:          metav1.LabelSelector{MatchLabels: maps.Clone(d.Selector)},
		Region:            d.LbRegion,
		ProviderConfigRef: d.ProviderConfigRef,
	}
	if len(d.Selector) == 0 {
		return nil, nil, fmt.Errorf("spec.selector: at least one label is needed")
	}
	for i, p := range d.Ports {
		if p.TargetPort < 1 || p.TargetPort > 65535 {
			return nil, nil, fmt.Errorf("spec.ports[%d].targetPort %d is not a port", i, p.TargetPort)
		}
		s.Ports = append(s.Ports, Port{
			Port:              intstr.FromInt32(int32(p.TargetPort)),
			Protocol:          strings.ToUpper(p.Protocol),
			AddressAnnotation: p.AddressPodAnnotation,
		})
	}

	s.PortRange = PortRange{Start: dedicatedDefaultMinPort, End: dedicatedDefaultMaxPort}
	if d.MinPort != nil {
		s.PortRange.Start = *d.MinPort
	}
	if d.MaxPort != nil {
		s.PortRange.End = *d.MaxPort
	}
	if d.MaxPod != nil {
		if *d.MaxPod < 1 {
			return nil, nil, fmt.Errorf("spec.maxPod must be at least 1, got %d", *d.MaxPod)
		}
		if end := s.PortRange.Start + *d.MaxPod*int64(len(d.Ports)) - 1; end < s.PortRange.End {
			s.PortRange.End = end
		}
	}

	if d.ListenerExtensiveParameters != "" {
		l, ignored, err := listenerFromParameters(d.ListenerExtensiveParameters)
		if err != nil {
			return nil, nil, fmt.Errorf("spec.listenerExtensiveParameters: %w", err)
		}
		s.Listener = l
		if len(ignored) > 0 {
			warnings = append(warnings, fmt.Sprintf("spec.listenerExtensiveParameters: %s not supported, ignored", strings.Join(ignored, ", ")))
		}
	}

	s.LoadBalancers.ExistingIDs = slices.Clone(d.ExistedLbIDs)
	if ac := d.LbAutoCreate; ac != nil && ac.Enable {
		tpl := &clbv1alpha1.LoadBalancerParameters{}
		if ac.ExtensiveParameters != "" {
			var ignored []string
			var err error
			if tpl, ignored, err = loadBalancerFromParameters(ac.ExtensiveParameters); err != nil {
				return nil, nil, fmt.Errorf("spec.lbAutoCreate.extensiveParameters: %w", err)
			}
			if len(ignored) > 0 {
				warnings = append(warnings, fmt.Sprintf("spec.lbAutoCreate.extensiveParameters: %s not supported, ignored", strings.Join(ignored, ", ")))
			}
		}
		s.LoadBalancers.Template = tpl
		s.LoadBalancers.AutoCreate = &AutoCreate{MaxLoadBalancers: dedicatedMaxAutoCreated}
	}
	return s, warnings, nil
}

// listenerFromParameters reads CreateListener parameters (JSON, the
// cloud's field names) into the pool's listener settings, and lists the
// parameters it does not map.
func listenerFromParameters(js string) (*clbv1alpha1.PoolListenerSettings, []string, error) {
	keys, err := jsonKeys(js)
	if err != nil {
		return nil, nil, err
	}
	p := &clbsdk.CreateListenerRequestParams{}
	if err := json.Unmarshal([]byte(js), p); err != nil {
		return nil, nil, err
	}
	l := &clbv1alpha1.PoolListenerSettings{
		Scheduler:         p.Scheduler,
		SessionExpireTime: p.SessionExpireTime,
		HealthCheck:       healthCheckFromSDK(p.HealthCheck),
	}
	ignored := unmapped(keys, "Scheduler", "SessionExpireTime", "HealthCheck")
	if p.HealthCheck != nil {
		hk, err := jsonKeys(string(keys["HealthCheck"]))
		if err != nil {
			return nil, nil, err
		}
		for _, k := range unmapped(hk, "HealthSwitch", "TimeOut", "IntervalTime", "HealthNum", "UnHealthNum",
			"CheckType", "CheckPort", "HttpCheckPath", "HttpCheckDomain", "HttpCheckMethod", "HttpCode") {
			ignored = append(ignored, "HealthCheck."+k)
		}
	}
	return l, ignored, nil
}

func healthCheckFromSDK(h *clbsdk.HealthCheck) *clbv1alpha1.HealthCheck {
	if h == nil {
		return nil
	}
	out := &clbv1alpha1.HealthCheck{
		TimeoutSeconds:     h.TimeOut,
		IntervalSeconds:    h.IntervalTime,
		HealthyThreshold:   h.HealthNum,
		UnhealthyThreshold: h.UnHealthNum,
		CheckType:          h.CheckType,
		CheckPort:          h.CheckPort,
		HTTPCheckPath:      h.HttpCheckPath,
		HTTPCheckDomain:    h.HttpCheckDomain,
		HTTPCheckMethod:    h.HttpCheckMethod,
		HTTPCode:           h.HttpCode,
	}
	if h.HealthSwitch != nil {
		on := *h.HealthSwitch == 1
		out.Enabled = &on
	}
	return out
}

// loadBalancerFromParameters reads CreateLoadBalancer parameters (JSON,
// the cloud's field names) into a LoadBalancer template, and lists the
// parameters it does not map.
func loadBalancerFromParameters(js string) (*clbv1alpha1.LoadBalancerParameters, []string, error) {
	keys, err := jsonKeys(js)
	if err != nil {
		return nil, nil, err
	}
	p := &clbsdk.CreateLoadBalancerRequestParams{}
	if err := json.Unmarshal([]byte(js), p); err != nil {
		return nil, nil, err
	}
	t := &clbv1alpha1.LoadBalancerParameters{
		Name:                     p.LoadBalancerName,
		Type:                     p.LoadBalancerType,
		VpcID:                    p.VpcId,
		SubnetID:                 p.SubnetId,
		VipIsp:                   p.VipIsp,
		AddressIPVersion:         p.AddressIPVersion,
		SLAType:                  p.SlaType,
		ProjectID:                p.ProjectId,
		MasterZoneID:             p.MasterZoneId,
		BandwidthPackageID:       p.BandwidthPackageId,
		LoadBalancerPassToTarget: p.LoadBalancerPassToTarget,
	}
	if ia := p.InternetAccessible; ia != nil {
		t.InternetAccessible = &clbv1alpha1.InternetAccessible{
			InternetChargeType:      ia.InternetChargeType,
			InternetMaxBandwidthOut: ia.InternetMaxBandwidthOut,
		}
	}
	for _, tag := range p.Tags {
		if tag == nil || tag.TagKey == nil {
			continue
		}
		if t.Tags == nil {
			t.Tags = map[string]string{}
		}
		v := ""
		if tag.TagValue != nil {
			v = *tag.TagValue
		}
		t.Tags[*tag.TagKey] = v
	}
	ignored := unmapped(keys, "LoadBalancerName", "LoadBalancerType", "VpcId", "SubnetId", "VipIsp", "AddressIPVersion",
		"SlaType", "ProjectId", "MasterZoneId", "BandwidthPackageId", "LoadBalancerPassToTarget", "InternetAccessible", "Tags")
	if p.InternetAccessible != nil {
		ik, err := jsonKeys(string(keys["InternetAccessible"]))
		if err != nil {
			return nil, nil, err
		}
		for _, k := range unmapped(ik, "InternetChargeType", "InternetMaxBandwidthOut") {
			ignored = append(ignored, "InternetAccessible."+k)
		}
	}
	return t, ignored, nil
}

// jsonKeys returns the members of a JSON object.
func jsonKeys(js string) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}

// unmapped lists, sorted, the keys that are not among mapped.
func unmapped(keys map[string]json.RawMessage, mapped ...string) []string {
	var out []string
	for k := range keys {
		if !slices.Contains(mapped, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
