package testenv

import (
	"context"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
)

// Sealer is the provider's records seal of this control plane: its key
// Secret in the provider's namespace, made by the first caller (a test or
// a provider). Tests that write records as a killed provider would have
// seal them with it.
func (e *Env) Sealer(ctx context.Context) (*seal.Sealer, error) {
	return seal.Load(ctx, e.Client, seal.DefaultNamespace)
}
