package tcapi

import (
	"context"
	"reflect"
	"strings"
	"time"
)

// Caller is what every call of one key pair in one region shares: the
// rate limits of its actions, the metrics, and how its service classifies
// error codes.
type Caller struct {
	Limits   *Limiters
	Metrics  *Metrics
	MaxTries int
	Classify CodeClassifier
}

// Invoke sends one API call through the action's rate limiter, sends it
// again (after another token) while the API answers RequestLimitExceeded,
// and records metrics. A read (Describe*) that fails for a reason waiting
// can fix is sent again too, like a registration batch (see RetryBatch):
// a controller's reconcile makes many reads, and one of them failing fails
// the reconcile, so with a tenth of calls failing most reconciles would,
// and managed resources back off exponentially (up to a minute) after
// consecutive failures. Reads change nothing, so retrying them is safe.
// Errors come back unwrapped; callers wrap them with the operation they
// were doing.
func Invoke[Req, Resp any](ctx context.Context, c *Caller, action string, req Req,
	send func(context.Context, Req) (Resp, error)) (Resp, error) {
	if strings.HasPrefix(action, "Describe") {
		var resp Resp
		err := RetryBatch(ctx, c.Classify, func() error {
			var err error
			resp, err = InvokeOnce(ctx, c, action, req, send)
			return err
		})
		return resp, err
	}
	return InvokeOnce(ctx, c, action, req, send)
}

// InvokeOnce is Invoke without the retries of reads.
func InvokeOnce[Req, Resp any](ctx context.Context, c *Caller, action string, req Req,
	send func(context.Context, Req) (Resp, error)) (Resp, error) {
	var zero Resp
	for try := 1; ; try++ {
		if err := c.Limits.Wait(ctx, action); err != nil {
			return zero, err
		}
		start := time.Now()
		resp, err := send(ctx, req)
		code := Code(err)
		if err != nil && code == "" {
			code = "ClientError"
		}
		c.Metrics.ObserveCall(action, code, time.Since(start))
		if err == nil {
			return resp, nil
		}
		if code == CodeNetworkError && ctx.Err() != nil {
			return zero, ctx.Err() // the SDK flattens a cancelled request into text
		}
		switch c.Classify(code) {
		case Throttled:
			c.Metrics.Throttled.WithLabelValues(action).Inc()
			c.Limits.Throttled(action)
			if try < c.MaxTries {
				continue
			}
		case Busy:
			c.Metrics.Busy.WithLabelValues(action).Inc()
		}
		return zero, err
	}
}

// Envelope returns the RequestId of an SDK answer (a pointer to a struct
// whose Response field points to the parameters), and false when the
// Response is missing: the SDK answers a body without one with a nil
// Response rather than an error. Every service's answers share this
// shape, so it is read once here rather than at every call.
func Envelope(resp any) (requestID string, ok bool) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return "", false
	}
	r := v.Elem().FieldByName("Response")
	if !r.IsValid() || r.Kind() != reflect.Pointer || r.IsNil() {
		return "", false
	}
	if id := r.Elem().FieldByName("RequestId"); id.IsValid() && id.Kind() == reflect.Pointer && !id.IsNil() {
		return id.Elem().String(), true
	}
	return "", true
}
