package v1alpha1

// A Regional resource may live in another region than its provider
// config's; the connector builds its client for GetRegion when not empty.

// GetRegion returns spec.forProvider.region, or "" for the provider
// config's region.
func (mg *LoadBalancer) GetRegion() string { return deref(mg.Spec.ForProvider.Region) }

// GetRegion returns spec.forProvider.region, or "" for the provider
// config's region.
func (mg *Listener) GetRegion() string { return deref(mg.Spec.ForProvider.Region) }

// GetRegion returns spec.forProvider.region, or "" for the provider
// config's region.
func (mg *Rule) GetRegion() string { return deref(mg.Spec.ForProvider.Region) }

// GetRegion returns spec.forProvider.region, or "" for the provider
// config's region.
func (mg *TargetSet) GetRegion() string { return deref(mg.Spec.ForProvider.Region) }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
