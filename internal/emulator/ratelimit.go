package emulator

import (
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// rateLimiter enforces the per-action, per-SecretId request rate of the
// real API with token buckets whose burst equals the rate.
type rateLimiter struct {
	settings atomic.Pointer[rateSettings]
	mu       sync.Mutex
	buckets  map[bucketKey]*bucket
}

type rateSettings struct {
	rate      float64
	perAction map[string]float64
}

type bucketKey struct {
	secretID string
	action   string
}

type bucket struct {
	tokens float64
	last   time.Time
}

func (rl *rateLimiter) init(rate float64, perAction map[string]float64) {
	rl.buckets = make(map[bucketKey]*bucket)
	rl.set(rate, perAction)
}

func (rl *rateLimiter) set(rate float64, perAction map[string]float64) {
	rl.settings.Store(&rateSettings{rate: rate, perAction: maps.Clone(perAction)})
	rl.reset()
}

func (rl *rateLimiter) reset() {
	rl.mu.Lock()
	clear(rl.buckets)
	rl.mu.Unlock()
}

func (s *rateSettings) limit(action string) float64 {
	if r, ok := s.perAction[action]; ok {
		return r
	}
	return s.rate
}

func (rl *rateLimiter) limitText(action string) string {
	return strconv.FormatFloat(rl.settings.Load().limit(action), 'f', -1, 64)
}

// allow takes one token from the bucket of (secretID, action).
func (rl *rateLimiter) allow(secretID, action string, now time.Time) bool {
	rate := rl.settings.Load().limit(action)
	if rate <= 0 {
		return true
	}
	burst := max(rate, 1)
	k := bucketKey{secretID, action}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	b, ok := rl.buckets[k]
	if !ok {
		b = &bucket{tokens: burst, last: now}
		rl.buckets[k] = b
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(burst, b.tokens+el.Seconds()*rate)
		b.last = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// SetRateLimit changes the request rate allowed per action and SecretId
// (requests per second; 0 disables) and its per-action overrides, and
// refills every bucket.
func (e *Emulator) SetRateLimit(perSecond float64, perAction map[string]float64) {
	e.limiter.set(perSecond, perAction)
}
