package podannotation

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// Annotations that ask for an elastic public IP (EIP) per Pod.
const (
	// AnnotationEIP asks for one EIP bound to the Pod's IP: "true" for the
	// defaults, or space, comma or semicolon separated key=value items:
	// isp, bandwidth, chargeType, releasePolicy, fallbackPool
	// ([namespace/]name), providerConfig (a ProviderConfig of the Pod's
	// namespace, which must be the grant's), grant (an EIPGrant), e.g.
	// "isp=BGP bandwidth=10 fallbackPool=rooms".
	AnnotationEIP = "network.tencentcloud.crossplane.io/eip"

	// TKEAnnotationEIPAttributes is TKE VPC-CNI's per-Pod EIP request: a
	// JSON object with AllocateAddresses' parameter names
	// (InternetServiceProvider, InternetChargeType, InternetMaxBandwidthOut).
	TKEAnnotationEIPAttributes = "tke.cloud.tencent.com/eip-attributes"
	// TKEAnnotationEIPClaimDeletePolicy "Never" keeps the EIP of a
	// deleted Pod for the next Pod of the same name (ReleasePolicy Never).
	TKEAnnotationEIPClaimDeletePolicy = "tke.cloud.tencent.com/eip-claim-delete-policy"
)

// SyntaxTKE is the Syntax of a request made with TKE's EIP annotations.
const SyntaxTKE = "tke"

// parseEIP reads our EIP annotation.
func parseEIP(v string) (*v1alpha1.EIPRequest, error) {
	e := &v1alpha1.EIPRequest{}
	v = strings.TrimSpace(v)
	if strings.EqualFold(v, "true") {
		return e, nil
	}
	items := strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '\n' || r == '\t' })
	if len(items) == 0 {
		return nil, fmt.Errorf("%s %q: want \"true\" or key=value items (isp, bandwidth, chargeType, releasePolicy, fallbackPool, providerConfig, grant)", AnnotationEIP, v)
	}
	for _, it := range items {
		k, val, ok := strings.Cut(it, "=")
		if !ok || val == "" {
			return nil, fmt.Errorf("%s item %q: want key=value", AnnotationEIP, it)
		}
		var err error
		switch strings.ToLower(k) {
		case "isp":
			e.ISP, err = oneOfErr(k, val, "BGP", "CMCC", "CTCC", "CUCC")
		case "bandwidth":
			e.Bandwidth, err = bandwidth(val)
		case "chargetype":
			e.InternetChargeType, err = oneOfErr(k, val, "TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PACKAGE")
		case "releasepolicy":
			e.ReleasePolicy, err = oneOfErr(k, val, v1alpha1.EIPReleaseAfterKeep, v1alpha1.EIPReleaseNever)
		case "providerconfig":
			// A ProviderConfig of the Pod's namespace: its account and region.
			if errs := validation.IsDNS1123Subdomain(val); len(errs) > 0 {
				err = fmt.Errorf("invalid ProviderConfig name: %s", strings.Join(errs, "; "))
			}
			e.ProviderConfigRef = &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: val}
		case "grant":
			if errs := validation.IsDNS1123Subdomain(val); len(errs) > 0 {
				err = fmt.Errorf("invalid EIPGrant name: %s", strings.Join(errs, "; "))
			}
			e.Grant = val
		case "fallbackpool":
			ref, nsGiven := parsePoolRef(val)
			err = validPoolRef(ref, nsGiven, validation.IsDNS1123Subdomain)
			e.FallbackPool = &ref
		default:
			err = fmt.Errorf("unknown key %q: want isp, bandwidth, chargeType, releasePolicy, fallbackPool, providerConfig or grant", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s item %q: %w", AnnotationEIP, it, err)
		}
	}
	return e, nil
}

// parseTKEEIP reads TKE's EIP annotations.
func parseTKEEIP(attrs, deletePolicy string, hasPolicy bool) (*v1alpha1.EIPRequest, error) {
	e := &v1alpha1.EIPRequest{}
	var a struct {
		ISP       string          `json:"InternetServiceProvider"`
		Charge    string          `json:"InternetChargeType"`
		Bandwidth json.RawMessage `json:"InternetMaxBandwidthOut"`
	}
	if strings.TrimSpace(attrs) != "" {
		if err := json.Unmarshal([]byte(attrs), &a); err != nil {
			return nil, fmt.Errorf("%s: want a JSON object such as {\"InternetMaxBandwidthOut\":10,\"InternetChargeType\":\"TRAFFIC_POSTPAID_BY_HOUR\"}: %w", TKEAnnotationEIPAttributes, err)
		}
	}
	var err error
	if a.ISP != "" {
		if e.ISP, err = oneOfErr("InternetServiceProvider", a.ISP, "BGP", "CMCC", "CTCC", "CUCC"); err != nil {
			return nil, fmt.Errorf("%s: %w", TKEAnnotationEIPAttributes, err)
		}
	}
	if a.Charge != "" {
		if e.InternetChargeType, err = oneOfErr("InternetChargeType", a.Charge, "TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PACKAGE"); err != nil {
			return nil, fmt.Errorf("%s: %w", TKEAnnotationEIPAttributes, err)
		}
	}
	if len(a.Bandwidth) > 0 {
		// TKE's examples write it as a number or a string.
		if e.Bandwidth, err = bandwidth(strings.Trim(string(a.Bandwidth), `"`)); err != nil {
			return nil, fmt.Errorf("%s: InternetMaxBandwidthOut: %w", TKEAnnotationEIPAttributes, err)
		}
	}
	if hasPolicy {
		if !strings.EqualFold(strings.TrimSpace(deletePolicy), v1alpha1.EIPReleaseNever) {
			return nil, fmt.Errorf("%s %q: only \"Never\" is known", TKEAnnotationEIPClaimDeletePolicy, deletePolicy)
		}
		e.ReleasePolicy = v1alpha1.EIPReleaseNever
	}
	return e, nil
}

func bandwidth(v string) (*int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 1 || n > 100000 {
		return nil, fmt.Errorf("bandwidth %q: want Mbps, 1-100000", v)
	}
	return &n, nil
}

func oneOfErr(k, v string, values ...string) (string, error) {
	c, ok := oneOf(v, values...)
	if !ok {
		return "", fmt.Errorf("%s %q: must be one of %s", k, v, strings.Join(values, ", "))
	}
	return c, nil
}
