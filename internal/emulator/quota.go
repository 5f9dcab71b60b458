package emulator

import (
	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// Quotas that are reported but not enforced keep the values of a fresh
// real account.
const (
	snatIPQuota            = 10
	ispLBQuota             = 15
	fullPortRangeListeners = 1
)

func (e *Emulator) describeQuota(c *call) (any, *apiError) {
	var req clb.DescribeQuotaRequestParams
	if err := decode(c, &req); err != nil {
		return nil, err
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	var open, internal, isp int64
	for _, lb := range e.st.lbs {
		if lb.Region != c.region {
			continue
		}
		switch {
		case lb.Type == "INTERNAL":
			internal++
		case lb.VipIsp != "BGP":
			isp++
			open++
		default:
			open++
		}
	}
	// Region-wide quotas carry the current usage; per-instance ones carry null.
	q := func(id string, limit int, current *int64) *clb.Quota {
		return &clb.Quota{QuotaId: ptr(id), QuotaLimit: ptr(int64(limit)), QuotaCurrent: current}
	}
	return &clb.DescribeQuotaResponseParams{
		QuotaSet: []*clb.Quota{
			q("TOTAL_OPEN_CLB_QUOTA", e.cfg.OpenLBQuota, &open),
			q("TOTAL_INTERNAL_CLB_QUOTA", e.cfg.InternalLBQuota, &internal),
			q("TOTAL_LISTENER_QUOTA", e.cfg.ListenerQuota, nil),
			q("TOTAL_TARGET_BIND_QUOTA", e.cfg.TargetQuota, nil),
			q("TOTAL_LISTENER_RULE_QUOTA", e.cfg.RuleQuota, nil),
			q("TOTAL_SNAT_IP_QUOTA", snatIPQuota, nil),
			q("TOTAL_ISP_CLB_QUOTA", ispLBQuota, &isp),
			q("TOTAL_FULL_PORT_RANGE_LISTENER_QUOTA", fullPortRangeListeners, nil),
		},
		RequestId: &c.requestID,
	}, nil
}
