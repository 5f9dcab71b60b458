// Drives the emulator with Tencent Cloud's Node.js SDK, configured the way
// docs/emulator.md tells users to, and prints one JSON object for the Go
// test (test/sdk) to check. Settings come from the environment:
// EMU_ENDPOINT (host:port), EMU_SECRET_ID, EMU_SECRET_KEY, EMU_REGION.
"use strict";
const tencentcloud = require("tencentcloud-sdk-nodejs");

const ClbClient = tencentcloud.clb.v20180317.Client;
const env = process.env;

function client(secretKey) {
  return new ClbClient({
    credential: { secretId: env.EMU_SECRET_ID, secretKey },
    region: env.EMU_REGION,
    // The SDK signs with the first label of this endpoint as the service.
    profile: { httpProfile: { endpoint: env.EMU_ENDPOINT, protocol: "http://", reqTimeout: 30 } },
  });
}

async function main() {
  const c = client(env.EMU_SECRET_KEY);
  const out = {};
  const created = await c.CreateLoadBalancer({ LoadBalancerType: "OPEN", LoadBalancerName: "node-sdk" });
  out.created = created.LoadBalancerIds;
  const described = await c.DescribeLoadBalancers({ LoadBalancerIds: created.LoadBalancerIds });
  out.totalCount = described.TotalCount;
  out.described = (described.LoadBalancerSet || []).map((lb) => ({
    id: lb.LoadBalancerId,
    name: lb.LoadBalancerName,
    type: lb.LoadBalancerType,
    vips: lb.LoadBalancerVips,
  }));
  // A wrong key must still be refused: the emulator checks the signature,
  // not just the scope.
  try {
    await client(env.EMU_SECRET_KEY + "x").DescribeLoadBalancers({});
    out.wrongKey = "accepted";
  } catch (e) {
    out.wrongKey = e.code || String(e);
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((e) => {
  process.stderr.write(`${e.code || ""} ${e.message || e}\n`);
  process.exit(1);
});
