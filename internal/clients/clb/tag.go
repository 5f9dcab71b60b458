package clb

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	sdkerrors "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/errors"
	tchttp "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/http"
)

// CLB has no action that tags an existing load balancer: the Tag API does
// (tag TagResources), naming it by its CAM resource, which holds the
// account's uin (cam GetUserAppId). The SDK's tag and cam modules are not
// dependencies of the provider, so both calls go through the SDK's common
// client, built from the CLB client's session: the same credentials,
// signing and endpoint, and the same rate limits, retries and error
// classes as every CLB call.

// MaxTagsPerCall is the Tag API's bound on the tags of one TagResources.
const MaxTagsPerCall = 9

// uinCache holds the account's uin, asked once per key pair.
type uinCache struct {
	mu  sync.Mutex
	uin string
}

// TagLoadBalancer binds tags to load balancer id of the client's region,
// replacing the values of keys it already has. The Tag API reports a
// resource it could not tag in FailedResources, not as an error: such an
// answer is returned as an error with that resource's code.
func (c *Client) TagLoadBalancer(ctx context.Context, id string, tags map[string]string) error {
	const op = "tag load balancer"
	switch {
	case id == "":
		return localErr(op, Invalid, "no load balancer id given")
	case len(tags) == 0:
		return nil
	case len(tags) > MaxTagsPerCall:
		return localErr(op, Invalid, fmt.Sprintf("%d tags, more than the %d of one call", len(tags), MaxTagsPerCall))
	}
	uin, err := c.ownerUin(ctx)
	if err != nil {
		return err
	}
	var list []map[string]string
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		list = append(list, map[string]string{"TagKey": k, "TagValue": tags[k]})
	}
	var out struct {
		Response struct {
			FailedResources []struct{ Resource, Code, Message string }
			RequestId       string
		}
	}
	if err := c.sendCommon(ctx, op, "tag", "2018-08-13", "TagResources", map[string]any{
		"ResourceList": []string{c.clbResource(uin, id)}, "Tags": list,
	}, &out); err != nil {
		return err
	}
	if f := out.Response.FailedResources; len(f) > 0 {
		return wrapErr(op, sdkerrors.NewTencentCloudSDKError(f[0].Code, f[0].Resource+": "+f[0].Message, out.Response.RequestId))
	}
	return nil
}

// clbResource is the CAM resource of load balancer id.
func (c *Client) clbResource(uin, id string) string {
	return fmt.Sprintf("qcs::clb:%s:uin/%s:clb/%s", c.common.GetRegion(), uin, id)
}

// ownerUin returns the uin of the account the key pair belongs to (a
// sub-account's owner), asked once.
func (c *Client) ownerUin(ctx context.Context) (string, error) {
	const op = "read the account's uin"
	c.s.uin.mu.Lock()
	defer c.s.uin.mu.Unlock()
	if c.s.uin.uin != "" {
		return c.s.uin.uin, nil
	}
	var out struct {
		Response struct{ OwnerUin json.RawMessage }
	}
	if err := c.sendCommon(ctx, op, "cam", "2019-01-16", "GetUserAppId", map[string]any{}, &out); err != nil {
		return "", err
	}
	// The API documents a string; take a number as well.
	var uin string
	if err := json.Unmarshal(out.Response.OwnerUin, &uin); err != nil {
		var n json.Number
		if json.Unmarshal(out.Response.OwnerUin, &n) != nil {
			return "", localErr(op, Transient, "the answer holds no OwnerUin")
		}
		uin = n.String()
	}
	if uin == "" {
		return "", localErr(op, Transient, "the answer holds no OwnerUin")
	}
	c.s.uin.uin = uin
	return uin, nil
}

// sendCommon sends action of service with params through the common client
// and decodes the answer's body into out. Every such call names service,
// version and action as literals, which TestCAMPolicyNamesEverySDKAction
// reads.
func (c *Client) sendCommon(ctx context.Context, op, service, version, action string, params map[string]any, out any) error {
	req := tchttp.NewCommonRequest(service, version, action)
	if err := req.SetActionParameters(params); err != nil {
		return wrapErr(op, err)
	}
	resp, err := invoke(ctx, c, action, req, func(ctx context.Context, req *tchttp.CommonRequest) (*tchttp.CommonResponse, error) {
		req.SetContext(ctx)
		resp := tchttp.NewCommonResponse()
		return resp, c.common.Send(req, resp)
	})
	if err != nil {
		return wrapErr(op, err)
	}
	body := resp.GetBody()
	if err := json.Unmarshal(body, out); err != nil {
		return localErr(op, Transient, "cannot read the answer: "+err.Error())
	}
	return nil
}
