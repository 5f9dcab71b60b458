package clb

// Limits of the CLB API (reference §5), in one place: the client checks
// and splits by them, and controllers that plan calls import them.
const (
	// MaxCreateListenerPorts: "Length of .Ports should be less than 50".
	MaxCreateListenerPorts = 49
	// MaxDeleteListenerIDs is the DeleteLoadBalancerListeners limit.
	MaxDeleteListenerIDs = 20
	// MaxDescribeLBIDs is the ids one DescribeLoadBalancers takes.
	MaxDescribeLBIDs = 20
	// MaxDescribeLBPage is the page size of DescribeLoadBalancers.
	MaxDescribeLBPage = 100
	// MaxDescribeListenerIDs is the ids one DescribeListeners takes.
	MaxDescribeListenerIDs = 100
	// MaxDescribeTargetsListeners is the listeners one DescribeTargets takes.
	MaxDescribeTargetsListeners = 20
	// MaxTargetHealthListeners is the listeners one DescribeTargetHealth
	// asks for. The API documents no bound on ListenerIds; this keeps a
	// request the size DescribeListeners takes.
	MaxTargetHealthListeners = 100
	// MaxBatchTargets is the targets one Batch(De)RegisterTargets takes.
	MaxBatchTargets = 500
	// MaxWeightRules, MaxWeightRuleTargets and MaxWeightTargets bound one
	// BatchModifyTargetWeight: listener or rule groups, targets per group,
	// targets in all.
	MaxWeightRules       = 100
	MaxWeightRuleTargets = 50
	MaxWeightTargets     = 500
)

// Actions the client coalesces, by their API names.
const (
	actionDescribeLBs       = "DescribeLoadBalancers"
	actionDescribeListeners = "DescribeListeners"
	actionDescribeTargets   = "DescribeTargets"
	actionTargetHealth      = "DescribeTargetHealth"
	actionRegister          = "BatchRegisterTargets"
	actionDeregister        = "BatchDeregisterTargets"
)
