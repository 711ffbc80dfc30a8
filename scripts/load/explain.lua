-- wrk script: tools/call explain_why against a seeded household (see scripts/load/run).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("HEARTH_TOKEN")
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"explain_why",'
  .. '"arguments":{"household_id":"' .. os.getenv("HEARTH_LOAD_HOUSEHOLD") .. '",'
  .. '"question":"why are the lights dim?"}}}'

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  io.write(string.format("requests %d in %.1fs: %.0f/s; p50 %.2f ms, p99 %.2f ms; non-2xx %d, socket errors %d\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
