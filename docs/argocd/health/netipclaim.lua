-- Health of a NetIPClaim, from its phase (which mirrors the NetIP that
-- records the claim). Pending waits for a Pod naming the claim to get an
-- IP; Expired is dormant: the IP went back to its pool after
-- expiredDuration and the next Pod naming the claim gets one again.
local meta = obj.metadata or {}
local status = obj.status or {}
local phase = status.phase or ""
if meta.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Deleting the claim"}
end
if phase == "Bound" then
  return {status = "Healthy", message = "Bound to " .. (status.boundedIP or "")}
end
if phase == "Expired" then
  return {status = "Suspended", message = "Expired: the IP was returned to its pool after expiredDuration; the next Pod naming the claim gets an IP again"}
end
return {status = "Progressing", message = "Waiting for a Pod that names the claim to get an IP"}
