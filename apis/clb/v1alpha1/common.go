package v1alpha1

// Annotations the controllers of this group use.
const (
	// AnnotationTask holds the id of the asynchronous cloud task that Create
	// started. Create may persist only annotations, so the task that makes
	// a new resource usable is recorded here; later tasks go to status.
	AnnotationTask = "clb.tencentcloud.m.crossplane.io/task"
)

// TaskStatus is the asynchronous cloud task a resource waits for. CLB
// writes return at once and finish later; Observe checks the task instead of
// any reconcile blocking on it, and a restarted provider picks it up here.
type TaskStatus struct {
	// ID of the task (the RequestId of the write that started it).
	// +optional
	ID string `json:"id,omitempty"`

	// Operation that started the task: Create, Update or Delete.
	// +optional
	Operation string `json:"operation,omitempty"`

	// State is Running, Succeeded or Failed.
	// +optional
	State string `json:"state,omitempty"`

	// Message is the cloud's reason when the task failed.
	// +optional
	Message string `json:"message,omitempty"`
}

// HealthCheck configures how a listener or rule probes its targets.
type HealthCheck struct {
	// Enabled turns health checks on (the cloud's default) or off.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// TimeoutSeconds of one probe, 2-60.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=60
	// +optional
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`

	// IntervalSeconds between probes, 2-300.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=300
	// +optional
	IntervalSeconds *int64 `json:"intervalSeconds,omitempty"`

	// HealthyThreshold is how many successes mark a target healthy, 2-10.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=10
	// +optional
	HealthyThreshold *int64 `json:"healthyThreshold,omitempty"`

	// UnhealthyThreshold is how many failures mark a target unhealthy, 2-10.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=10
	// +optional
	UnhealthyThreshold *int64 `json:"unhealthyThreshold,omitempty"`

	// CheckType is the probe protocol: TCP, HTTP, HTTPS, GRPC, PING or CUSTOM.
	// +kubebuilder:validation:Enum=TCP;HTTP;HTTPS;GRPC;PING;CUSTOM
	// +optional
	CheckType *string `json:"checkType,omitempty"`

	// CheckPort probes this port instead of the target's.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	CheckPort *int64 `json:"checkPort,omitempty"`

	// HTTPCheckPath is the path of HTTP probes, e.g. /healthz.
	// +optional
	HTTPCheckPath *string `json:"httpCheckPath,omitempty"`

	// HTTPCheckDomain is the Host of HTTP probes.
	// +optional
	HTTPCheckDomain *string `json:"httpCheckDomain,omitempty"`

	// HTTPCheckMethod is HEAD or GET.
	// +kubebuilder:validation:Enum=HEAD;GET
	// +optional
	HTTPCheckMethod *string `json:"httpCheckMethod,omitempty"`

	// HTTPCode is a bit mask of healthy status classes: 1=1xx, 2=2xx, 4=3xx,
	// 8=4xx, 16=5xx; e.g. 31 accepts all.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31
	// +optional
	HTTPCode *int64 `json:"httpCode,omitempty"`
}
