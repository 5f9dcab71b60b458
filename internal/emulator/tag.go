package emulator

import (
	"encoding/json"
	"strings"
)

// The Tag API (tag, 2018-08-13) as far as CLB load balancers go:
// TagResources binds tags to load balancers named by their CAM resource
// ("qcs::clb:<region>:uin/<uin>:clb/<lb-id>"), and DescribeLoadBalancers
// then shows them (its tag-key and tag:<key> filters included). cam
// GetUserAppId tells a client its account's uin, which those names hold.
// Neither API needs a region: the resource names carry it.

const (
	tagServiceName = "tag"
	tagAPIVersion  = "2018-08-13"
	camServiceName = "cam"
	camAPIVersion  = "2019-01-16"
)

// Bounds of TagResources, from the API reference.
const (
	maxTagResources     = 9  // ResourceList per call
	maxTagsPerCall      = 9  // Tags per call
	maxTagsPerResource  = 50 // tags a resource may carry
	maxTagKeyLength     = 127
	maxTagValueLength   = 255
	codeResourceNumCall = "LimitExceeded.ResourceNumPerRequest"
	codeTagNumCall      = "LimitExceeded.TagNumPerRequest"
	codeAttachedTags    = "LimitExceeded.ResourceAttachedTags"
	codeResourceDesc    = "InvalidParameterValue.ResourceDescriptionError"
	codeServiceType     = "InvalidParameterValue.ServiceTypeInvalid"
	codeResourcePrefix  = "InvalidParameterValue.ResourcePrefixInvalid"
	codeResourceID      = "InvalidParameterValue.ResourceIdInvalid"
	codeTagRegion       = "InvalidParameterValue.RegionInvalid"
	codeUin             = "InvalidParameterValue.UinInvalid"
	codeTagKeyEmpty     = "InvalidParameterValue.TagKeyEmpty"
	codeTagKeyDuplicate = "InvalidParameterValue.TagKeyDuplicate"
	codeTagKeyLength    = "InvalidParameterValue.TagKeyLengthExceeded"
	codeTagValueLength  = "InvalidParameterValue.TagValueLengthExceeded"
	codeReservedTagKey  = "InvalidParameterValue.ReservedTagKey"
)

func lookupTagHandler(action string) handler {
	if action == "TagResources" {
		return (*Emulator).tagResources
	}
	return nil
}

func lookupCAMHandler(action string) handler {
	if action == "GetUserAppId" {
		return (*Emulator).getUserAppID
	}
	return nil
}

// regionless reports whether svc's actions need no region.
func regionless(svc *apiService) bool {
	return svc.name == tagServiceName || svc.name == camServiceName
}

func (e *Emulator) getUserAppID(c *call) (any, *apiError) {
	var req struct{}
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	return map[string]any{"AppId": emulatedAppID, "Uin": EmulatedUIN, "OwnerUin": EmulatedUIN, "RequestId": c.requestID}, nil
}

type tagResourcesRequest struct {
	ResourceList []*string
	Tags         []*struct{ TagKey, TagValue *string }
}

// tagResources checks every resource and tag first and writes only when all
// pass: a load balancer the account does not have is refused, not listed
// in FailedResources.
func (e *Emulator) tagResources(c *call) (any, *apiError) {
	var req tagResourcesRequest
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	switch {
	case len(req.ResourceList) == 0:
		return nil, missing("ResourceList")
	case len(req.ResourceList) > maxTagResources:
		return nil, errorf(codeResourceNumCall, "At most %d resources are tagged by one request, got %d.", maxTagResources, len(req.ResourceList))
	case len(req.Tags) == 0:
		return nil, missing("Tags")
	case len(req.Tags) > maxTagsPerCall:
		return nil, errorf(codeTagNumCall, "At most %d tags are bound by one request, got %d.", maxTagsPerCall, len(req.Tags))
	}
	var tags []tag
	seen := map[string]bool{}
	for _, t := range req.Tags {
		if t == nil || str(t.TagKey) == "" {
			return nil, errorf(codeTagKeyEmpty, "A tag key must not be empty.")
		}
		k, v := *t.TagKey, str(t.TagValue)
		switch {
		case seen[k]:
			return nil, errorf(codeTagKeyDuplicate, "The tag key %s is given twice.", k)
		case len(k) > maxTagKeyLength:
			return nil, errorf(codeTagKeyLength, "A tag key has at most %d characters.", maxTagKeyLength)
		case len(v) > maxTagValueLength:
			return nil, errorf(codeTagValueLength, "A tag value has at most %d characters.", maxTagValueLength)
		case reservedTagKey(k):
			return nil, errorf(codeReservedTagKey, "The tag key %s is reserved by the system (qcloud, tencent, project).", k)
		}
		seen[k] = true
		tags = append(tags, tag{Key: k, Value: v})
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	var lbs []*lbState
	for _, r := range req.ResourceList {
		lb, apiErr := e.taggedLB(str(r))
		if apiErr != nil {
			return nil, apiErr
		}
		if n := len(withTags(lb.Tags, tags)); n > maxTagsPerResource {
			return nil, errorf(codeAttachedTags, "The resource %s would carry %d tags, more than %d.", str(r), n, maxTagsPerResource)
		}
		lbs = append(lbs, lb)
	}
	for _, lb := range lbs {
		lb.Tags = withTags(lb.Tags, tags)
		if lb.committed != nil {
			// Tags are no part of a task: a failed one keeps them.
			lb.committed.Tags = withTags(lb.committed.Tags, tags)
		}
	}
	c.changed = true
	return map[string]any{"FailedResources": []any{}, "RequestId": c.requestID}, nil
}

// taggedLB is the load balancer resource names:
// qcs::clb:<region>:uin/<uin>:clb/<lb-id>. Called with e.mu held.
func (e *Emulator) taggedLB(resource string) (*lbState, *apiError) {
	p := strings.Split(resource, ":")
	if len(p) != 6 || p[0] != "qcs" || p[1] != "" {
		return nil, errorf(codeResourceDesc, "The resource %q is not qcs::<service>:<region>:uin/<uin>:<prefix>/<id>.", resource)
	}
	if p[2] != serviceName {
		return nil, errorf(codeServiceType, "The emulator tags clb resources only, not %q.", p[2])
	}
	if !e.regionExists(p[3]) {
		return nil, errorf(codeTagRegion, "The region %q of %s does not exist.", p[3], resource)
	}
	if uin, ok := strings.CutPrefix(p[4], "uin/"); !ok || uin != EmulatedUIN {
		return nil, errorf(codeUin, "The account %q of %s is not this one (uin/%s).", p[4], resource, EmulatedUIN)
	}
	prefix, id, ok := strings.Cut(p[5], "/")
	if !ok || prefix != serviceName {
		return nil, errorf(codeResourcePrefix, "The resource prefix of %s is not clb.", resource)
	}
	lb := e.st.lbs[id]
	if lb == nil || lb.Region != p[3] {
		return nil, errorf(codeResourceID, "The load balancer %s does not exist in %s.", id, p[3])
	}
	return lb, nil
}

// withTags is have with add bound: a key already there takes the new value.
func withTags(have, add []tag) []tag {
	out := append([]tag(nil), have...)
	for _, t := range add {
		replaced := false
		for i := range out {
			if out[i].Key == t.Key {
				out[i].Value, replaced = t.Value, true
			}
		}
		if !replaced {
			out = append(out, t)
		}
	}
	return out
}

// reservedTagKey: the system's keys, which no user may bind.
func reservedTagKey(k string) bool {
	for _, p := range []string{"qcloud", "tencent", "project"} {
		if strings.HasPrefix(strings.ToLower(k), p) {
			return true
		}
	}
	return false
}

// tagCAMResources lists the CAM resources a tag call acts on: the
// resources it names.
func tagCAMResources(body []byte) []string {
	var req struct{ ResourceList []*string }
	_ = json.Unmarshal(body, &req) // a malformed body is the handler's error to report
	var out []string
	for _, r := range req.ResourceList {
		if r != nil && *r != "" {
			out = append(out, *r)
		}
	}
	if len(out) == 0 {
		out = []string{"qcs::tag::uin/" + EmulatedUIN + ":*"}
	}
	return out
}
