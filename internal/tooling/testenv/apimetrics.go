package testenv

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// An APIRequest is one kind of request the API server counts in
// apiserver_request_total: its verb (GET, LIST, WATCH, POST, PUT, PATCH,
// DELETE, …) and the resource it names, with its subresource ("status").
type APIRequest struct {
	Verb        string
	Resource    string
	Subresource string
	// Conflict is set for requests refused with 409 Conflict: a write
	// from a stale read, which changed nothing and is retried.
	Conflict bool
}

func (r APIRequest) String() string {
	s := r.Verb + " " + r.Resource
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	if r.Conflict {
		s += " (409 Conflict)"
	}
	return s
}

// Write reports whether the request changes state (the API server's
// mutating verbs).
func (r APIRequest) Write() bool {
	switch r.Verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
		return true
	}
	return false
}

// APIRequests counts requests by kind, summed over response codes, API
// groups and versions.
type APIRequests map[APIRequest]float64

// ScrapeAPIRequests reads apiserver_request_total from the /metrics of the
// API server cfg points at (the admin config of an Env may read it). The
// counters hold since the API server started: take the difference of two
// scrapes (Sub) to count what happened in between.
func ScrapeAPIRequests(ctx context.Context, cfg *rest.Config) (APIRequests, error) {
	raw, err := APIServerMetrics(ctx, cfg)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("cannot parse the API server's metrics: %w", err)
	}
	out := APIRequests{}
	mf, ok := mfs["apiserver_request_total"]
	if !ok {
		return out, nil
	}
	for _, m := range mf.GetMetric() {
		var k APIRequest
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				k.Verb = l.GetValue()
			case "resource":
				k.Resource = l.GetValue()
			case "subresource":
				k.Subresource = l.GetValue()
			case "code":
				k.Conflict = l.GetValue() == "409"
			}
		}
		out[k] += m.GetCounter().GetValue()
	}
	return out, nil
}

// Sub returns the requests made since before was scraped; kinds with none
// are left out.
func (a APIRequests) Sub(before APIRequests) APIRequests {
	out := APIRequests{}
	for k, v := range a {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// Count sums the requests for which keep returns true.
func (a APIRequests) Count(keep func(APIRequest) bool) float64 {
	n := 0.0
	for k, v := range a {
		if keep(k) {
			n += v
		}
	}
	return n
}

// Of counts requests of verb on resource (and subresource, "" for the
// object itself) that were not refused as conflicts.
func (a APIRequests) Of(verb, resource, subresource string) float64 {
	return a[APIRequest{Verb: verb, Resource: resource, Subresource: subresource}]
}

// Conflicts counts requests of verb on resource (and subresource) refused
// with 409 Conflict.
func (a APIRequests) Conflicts(verb, resource, subresource string) float64 {
	return a[APIRequest{Verb: verb, Resource: resource, Subresource: subresource, Conflict: true}]
}

// String lists the counts, one kind a line, sorted.
func (a APIRequests) String() string {
	keys := slices.SortedFunc(maps.Keys(a), func(x, y APIRequest) int { return strings.Compare(x.String(), y.String()) })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %g\n", k, a[k])
	}
	return b.String()
}
