-- Health of a RemotePod (a Pod of a workload cluster behind NAT), from
-- what the provider tells that Pod through the RemotePod's status.
local meta = obj.metadata or {}
local spec = obj.spec or {}
local status = obj.status or {}
local ann = status.annotations or {}
if spec.deleting or meta.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "The Pod is being deleted; its targets are deregistered"}
end
local ours = "network.tencentcloud.crossplane.io/address-ready"
local bcs = "networkextension.bkbcs.tencent.com/portbinding-ready"
local cond = nil
for _, c in ipairs(status.conditions or {}) do
  if c.type == ours or c.type == bcs then
    cond = c
  end
end
local told = ann["network.tencentcloud.crossplane.io/status"] or ann["status.portpools.networkextension.bkbcs.tencent.com"]
if (cond ~= nil and cond.status == "True") or (cond == nil and told == "Ready") then
  local msg = "Bound"
  if cond ~= nil and cond.message ~= nil and cond.message ~= "" then
    msg = cond.message
  elseif ann["network.tencentcloud.crossplane.io/addresses"] ~= nil then
    msg = ann["network.tencentcloud.crossplane.io/addresses"]
  end
  return {status = "Healthy", message = msg}
end
if cond ~= nil then
  local r = cond.reason or ""
  if r == "NoPortAvailable" or r == "PoolNotFound" or r == "PoolNotAllowed" or r == "Invalid" or r == "QuotaExceeded" or r == "InvalidAddressRequest" then
    return {status = "Degraded", message = r .. ": " .. (cond.message or "")}
  end
  if r ~= "" then
    return {status = "Progressing", message = r .. ": " .. (cond.message or "")}
  end
end
local w = status.warning
if w ~= nil then
  return {status = "Degraded", message = (w.reason or "") .. ": " .. (w.message or "")}
end
return {status = "Progressing", message = "Nothing told yet: the Pod waits for its IP or for the provider"}
