// SPDX-License-Identifier: Apache-2.0
// The read API of the collector that served this page: the user's token from session storage
// in the Authorization header of every call, never in a URL. Errors carry the API's detail.
// A call given an AbortSignal is cancelled when it aborts (a newer render superseded it).
const TOKEN_KEY = "roottrace.token";

export const token = () => sessionStorage.getItem(TOKEN_KEY);
export const setToken = (t) => sessionStorage.setItem(TOKEN_KEY, t);
export const clearToken = () => sessionStorage.removeItem(TOKEN_KEY);

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail || "HTTP " + status);
    this.status = status;
  }
}

function url(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {}))
    if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return path + (s ? "?" + s : "");
}

async function call(method, path, params, body, { as, signal } = {}) {
  const headers = { Authorization: "Bearer " + token() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(url(path, params), {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer", signal,
  });
  if (!r.ok) {
    let detail = "";
    try { const e = await r.json(); detail = e.detail || e.error; } catch (_) { /* not JSON */ }
    throw new ApiError(r.status, detail || r.statusText);
  }
  if (as === "blob") return r.blob();
  if (as === "text") return r.text();
  return r.json();
}

// opts: {as: "blob" | "text" (else JSON), signal}
export const get = (path, params, opts) => call("GET", path, params, undefined, opts);
export const put = (path, body) => call("PUT", path, undefined, body);
