# SPDX-License-Identifier: Apache-2.0
# OTLP profiles requests (ExportProfilesServiceRequest, opentelemetry-proto v1.11.0 numbering, as
# proto/otlp_profiles.proto) built in plain Python, in protobuf and in OTLP/JSON form.
#
#   r = otlp_py.Request()
#   f = r.location(["inlined", "caller"])           # lines, innermost first
#   s = r.stack([f, r.location(["main"])])          # leaf first
#   rp = r.resource({"service.name": "api"})
#   rp.profile(("cpu", "nanoseconds"), samples=[{"stack": s, "values": [10]}])
#   r.protobuf(), r.json()
import json

from pprof_py import _int, _key, _varint, field_bytes, field_packed


def field_fixed64(field, n):
    return _key(field, 1) + (n & (1 << 64) - 1).to_bytes(8, "little")


def any_value(v):
    return field_bytes(1, v) if isinstance(v, str) else _int(3, v)


def key_value(k, v):
    return field_bytes(1, k) + field_bytes(2, any_value(v))


class Profile:
    def __init__(self, req, sample_type, period_type, period, time_nanos, samples):
        self.req, self.sample_type, self.period_type = req, sample_type, period_type
        self.period, self.time_nanos, self.samples = period, time_nanos, samples

    def _vt(self, vt):
        return _int(1, self.req.string(vt[0])) + _int(2, self.req.string(vt[1]))

    def protobuf(self, v19=False):
        out = field_bytes(1, self._vt(self.sample_type))
        for s in self.samples:
            body = _int(1, s.get("stack", 0))
            if v19:  # opentelemetry-proto v1.9.0: values = 2, attribute_indices = 3, link = 4
                body += field_packed(2, s.get("values", []))
                body += _int(4, s.get("link", 0))
            else:
                body += field_packed(2, s["attributes"]) if s.get("attributes") else b""
                body += _int(3, s.get("link", 0))
                body += field_packed(4, s["values"]) if s.get("values") else b""
            if s.get("timestamps"):
                body += field_bytes(5, b"".join(t.to_bytes(8, "little")
                                                for t in s["timestamps"]))
            out += field_bytes(2, body)
        if self.time_nanos:
            out += field_fixed64(3, self.time_nanos)
        if self.period_type:
            out += field_bytes(5, self._vt(self.period_type))
        out += _int(6, self.period)
        return out

    def json(self):
        def vt(v):
            return {"typeStrindex": self.req.string(v[0]), "unitStrindex": self.req.string(v[1])}
        doc = {"sampleType": vt(self.sample_type), "samples": [], "period": str(self.period)}
        if self.period_type:
            doc["periodType"] = vt(self.period_type)
        if self.time_nanos:
            doc["timeUnixNano"] = str(self.time_nanos)
        for s in self.samples:
            js = {"stackIndex": s.get("stack", 0)}
            if s.get("values"):
                js["values"] = [str(v) for v in s["values"]]
            if s.get("timestamps"):
                js["timestampsUnixNano"] = [str(t) for t in s["timestamps"]]
            if s.get("link"):
                js["linkIndex"] = s["link"]
            doc["samples"].append(js)
        return doc


class ResourceProfiles:
    def __init__(self, req, attrs):
        self.req, self.attrs, self.profiles = req, attrs, []

    def profile(self, sample_type, samples, period_type=None, period=0, time_nanos=0):
        p = Profile(self.req, sample_type, period_type, period, time_nanos, samples)
        self.profiles.append(p)
        return p

    def protobuf(self, v19=False):
        res = b"".join(field_bytes(1, key_value(k, v)) for k, v in self.attrs.items())
        scope = b"".join(field_bytes(2, p.protobuf(v19)) for p in self.profiles)
        return field_bytes(1, res) + field_bytes(2, scope)

    def json(self):
        attrs = [{"key": k, "value": {"stringValue": v} if isinstance(v, str)
                  else {"intValue": str(v)}} for k, v in self.attrs.items()]
        return {"resource": {"attributes": attrs},
                "scopeProfiles": [{"scope": {}, "profiles": [p.json() for p in self.profiles]}]}


class Request:
    """Dictionary tables start with their null entry; every helper returns an index."""

    def __init__(self):
        self.strings, self.string_index = [""], {"": 0}
        self.functions = [None]   # name string index, or (name, filename) string indexes
        self.mappings = [None]    # (filename, start, limit, offset, build id attribute)
        self.locations = [None]   # (mapping, address, [function index or (index, line)])
        self.stacks = [None]      # [location indices]
        self.links = [None]       # (trace bytes, span bytes)
        self.attributes = [None]  # (key, value)
        self.resources = []

    def string(self, s):
        if s not in self.string_index:
            self.string_index[s] = len(self.strings)
            self.strings.append(s)
        return self.string_index[s]

    def function(self, name, filename=None):
        self.functions.append((self.string(name), self.string(filename)) if filename
                              else self.string(name))
        return len(self.functions) - 1

    def mapping(self, filename, build_id=None, start=0x400000, limit=0x800000, offset=0):
        attr = 0
        if build_id:
            self.attributes.append((self.string("process.executable.build_id.gnu"), build_id))
            attr = len(self.attributes) - 1
        self.mappings.append((self.string(filename), start, limit, offset, attr))
        return len(self.mappings) - 1

    def location(self, names=(), mapping=0, address=0):
        """names: the location's lines, innermost (inlined) first; each a function name, or
        (name, filename, line)."""
        self.locations.append((mapping, address, [
            (self.function(n[0], n[1]), n[2]) if isinstance(n, tuple) else self.function(n)
            for n in names]))
        return len(self.locations) - 1

    def stack(self, locations):
        self.stacks.append(list(locations))
        return len(self.stacks) - 1

    def link(self, trace_hex, span_hex):
        self.links.append((bytes.fromhex(trace_hex), bytes.fromhex(span_hex)))
        return len(self.links) - 1

    def resource(self, attrs):
        rp = ResourceProfiles(self, attrs)
        self.resources.append(rp)
        return rp

    # ---- protobuf ----
    def _dictionary(self):
        out = bytearray()
        for m in self.mappings:
            body = b""
            if m:
                fn, start, limit, off, attr = m
                body = (_int(1, start) + _int(2, limit) + _int(3, off) + _int(4, fn) +
                        (field_packed(5, [attr]) if attr else b""))
            out += field_bytes(1, body)
        for loc in self.locations:
            body = b""
            if loc:
                mapping, address, funcs = loc
                body = _int(1, mapping) + _int(2, address)
                body += b"".join(field_bytes(3, _int(1, f[0]) + _int(2, f[1]))
                                 if isinstance(f, tuple) else field_bytes(3, _int(1, f))
                                 for f in funcs)
            out += field_bytes(2, body)
        for f in self.functions:
            if isinstance(f, tuple):
                out += field_bytes(3, _int(1, f[0]) + _int(3, f[1]))
            else:
                out += field_bytes(3, _int(1, f) if f else b"")
        for link in self.links:
            t, s = link or (bytes(16), bytes(8))
            out += field_bytes(4, field_bytes(1, t) + field_bytes(2, s))
        for s in self.strings:
            out += field_bytes(5, s)
        for a in self.attributes:
            out += field_bytes(6, _int(1, a[0]) + field_bytes(2, any_value(a[1])) if a else b"")
        for st in self.stacks:
            out += field_bytes(7, field_packed(1, st) if st else b"")
        return bytes(out)

    def protobuf(self, v19=False):
        """v19: the Sample numbering of opentelemetry-proto v1.9.0 (not supported)."""
        out = b"".join(field_bytes(1, rp.protobuf(v19)) for rp in self.resources)
        return out + field_bytes(2, self._dictionary())

    # ---- JSON ----
    def _json_dictionary(self):
        d = {"mappingTable": [], "locationTable": [], "functionTable": [], "linkTable": [],
             "stringTable": list(self.strings), "attributeTable": [], "stackTable": []}
        for m in self.mappings:
            if not m:
                d["mappingTable"].append({})
                continue
            fn, start, limit, off, attr = m
            d["mappingTable"].append({"memoryStart": str(start), "memoryLimit": str(limit),
                                      "fileOffset": str(off), "filenameStrindex": fn,
                                      "attributeIndices": [attr] if attr else []})
        for loc in self.locations:
            if not loc:
                d["locationTable"].append({})
                continue
            mapping, address, funcs = loc
            d["locationTable"].append({"mappingIndex": mapping, "address": str(address),
                                       "lines": [{"functionIndex": f[0], "line": str(f[1])}
                                                 if isinstance(f, tuple) else
                                                 {"functionIndex": f} for f in funcs]})
        for f in self.functions:
            if isinstance(f, tuple):
                d["functionTable"].append({"nameStrindex": f[0], "filenameStrindex": f[1]})
            else:
                d["functionTable"].append({"nameStrindex": f} if f else {})
        for link in self.links:
            t, s = link or (bytes(16), bytes(8))
            d["linkTable"].append({"traceId": t.hex(), "spanId": s.hex()})
        for a in self.attributes:
            d["attributeTable"].append({"keyStrindex": a[0], "value": {"stringValue": a[1]}}
                                       if a else {})
        for st in self.stacks:
            d["stackTable"].append({"locationIndices": st} if st else {})
        return d

    def json(self):
        return json.dumps({"resourceProfiles": [rp.json() for rp in self.resources],
                           "dictionary": self._json_dictionary()}).encode()


def parse_response(data):
    """ExportProfilesServiceResponse -> (rejected_profiles, error_message)."""
    from pprof_py import _fields
    rejected, message = 0, ""
    for field, wire, val in _fields(data):
        if field == 1:
            for f2, w2, v2 in _fields(val):
                if f2 == 1:
                    rejected = v2
                elif f2 == 2:
                    message = v2.decode()
    return rejected, message
