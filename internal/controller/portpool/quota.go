package portpool

import (
	"context"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
)

const (
	// quotaTTL is how long a listener quota is trusted; quotas change by
	// ticket, rarely.
	quotaTTL = 5 * time.Minute
)

// quotaCache remembers the listener quota per client (one account and
// region) for quotaTTL.
type quotaCache struct {
	now func() time.Time

	mu sync.Mutex
	m  map[api]quotaEntry
}

type quotaEntry struct {
	limit int64
	at    time.Time
}

func newQuotaCache(now func() time.Time) *quotaCache {
	return &quotaCache{now: now, m: map[api]quotaEntry{}}
}

// listenerQuota returns the listeners allowed per load balancer. When
// DescribeQuota fails, a value older than quotaTTL still serves.
func (q *quotaCache) listenerQuota(ctx context.Context, c api) (int64, error) {
	now := q.now()
	q.mu.Lock()
	cached, ok := q.m[c]
	q.mu.Unlock()
	if ok && now.Sub(cached.at) < quotaTTL {
		return cached.limit, nil
	}
	limit, err := describeListenerQuota(ctx, c)
	if err != nil {
		if ok {
			return cached.limit, nil
		}
		return 0, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for k, v := range q.m {
		if now.Sub(v.at) > 2*quotaTTL {
			delete(q.m, k) // a client rotated away
		}
	}
	q.m[c] = quotaEntry{limit: limit, at: now}
	return limit, nil
}

func describeListenerQuota(ctx context.Context, c api) (int64, error) {
	qs, err := c.DescribeQuota(ctx)
	if err != nil {
		return 0, errors.Wrap(err, "cannot read the listener quota")
	}
	for _, q := range qs {
		if q != nil && clb.Deref(q.QuotaId) == clb.ListenerQuotaID && q.QuotaLimit != nil {
			return *q.QuotaLimit, nil
		}
	}
	return 0, errors.Errorf("cannot read the listener quota: DescribeQuota has no %s", clb.ListenerQuotaID)
}
