# SPDX-License-Identifier: Apache-2.0
# pprof (perftools.profiles.Profile) writer and reader in plain Python, protobuf by hand:
# build test uploads without protoc, and read exports back. Stacks are given root first.
import gzip
import struct


def _varint(n):
    n &= (1 << 64) - 1  # int64 as two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint((field << 3) | wire)


def _int(field, n):
    return _key(field, 0) + _varint(n) if n else b""


def _bytes(field, data):
    return _key(field, 2) + _varint(len(data)) + data


def _packed(field, nums):
    if not nums:
        return b""
    return _bytes(field, b"".join(_varint(n) for n in nums))


class _Strings:
    def __init__(self):
        self.table = [""]
        self.index = {"": 0}

    def __call__(self, s):
        if s not in self.index:
            self.index[s] = len(self.table)
            self.table.append(s)
        return self.index[s]


def build(samples, sample_types=(("cpu", "nanoseconds"),), period_type=None, period=0,
          time_nanos=0, duration_nanos=0, labels=None):
    """samples: iterable of (frames root first, value or list of values). Returns raw bytes."""
    strings = _Strings()
    funcs = {}
    out = bytearray()
    for t, u in sample_types:
        out += _bytes(1, _int(1, strings(t)) + _int(2, strings(u)))
    for frames, values in samples:
        if isinstance(values, int):
            values = [values]
        ids = []
        for name in reversed(list(frames)):  # pprof is leaf first
            if name not in funcs:
                funcs[name] = len(funcs) + 1
            ids.append(funcs[name])
        body = _packed(1, ids) + _packed(2, values)
        for k, v in (labels or {}).items():
            body += _bytes(3, _int(1, strings(k)) + _int(2, strings(v)))
        out += _bytes(2, body)
    out += _bytes(3, _int(1, 1) + _int(2, 0x1000) + _int(3, 0x100000) + _int(5, strings("app"))
                  + _int(7, 1))
    for name, fid in funcs.items():  # location id == function id
        out += _bytes(4, _int(1, fid) + _int(2, 1) + _bytes(4, _int(1, fid)))
    for name, fid in funcs.items():
        out += _bytes(5, _int(1, fid) + _int(2, strings(name)) + _int(3, strings(name)))
    pt = period_type or sample_types[0]
    pt_msg = _int(1, strings(pt[0])) + _int(2, strings(pt[1]))
    tail = _int(9, time_nanos) + _int(10, duration_nanos) + _bytes(11, pt_msg) + _int(12, period)
    for s in strings.table:
        out += _bytes(6, s.encode())
    return bytes(out + tail)


def build_gz(*args, **kwargs):
    return gzip.compress(build(*args, **kwargs))


# ---- reading ---------------------------------------------------------------------------

def _read_varint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def _fields(buf):
    i = 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _read_varint(buf, i)
        elif wire == 2:
            n, i = _read_varint(buf, i)
            v = buf[i:i + n]
            i += n
        elif wire == 1:
            v = struct.unpack("<q", buf[i:i + 8])[0]
            i += 8
        elif wire == 5:
            v = struct.unpack("<i", buf[i:i + 4])[0]
            i += 4
        else:
            raise ValueError("wire type %d" % wire)
        yield field, wire, v


def _signed(n):
    return n - (1 << 64) if n >= 1 << 63 else n


def _nums(wire, v):
    if wire == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        n, i = _read_varint(v, i)
        out.append(n)
    return out


def parse(data):
    """Raw or gzipped pprof -> dict(sample_types, period_type, period, time_nanos,
    duration_nanos, samples=[(frames root first, [values])])."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings, raw_samples, locs, funcs, types = [], [], {}, {}, []
    prof = {"period": 0, "time_nanos": 0, "duration_nanos": 0, "period_type": None}
    for field, wire, v in _fields(data):
        if field == 1:
            d = {f: x for f, _, x in _fields(v)}
            types.append((d.get(1, 0), d.get(2, 0)))
        elif field == 2:
            ids, vals = [], []
            for f, w, x in _fields(v):
                if f == 1:
                    ids += _nums(w, x)
                elif f == 2:
                    vals += [_signed(n) for n in _nums(w, x)]
            raw_samples.append((ids, vals))
        elif field == 4:
            lid, fids = 0, []
            for f, w, x in _fields(v):
                if f == 1:
                    lid = x
                elif f == 4:
                    fids.append({a: b for a, _, b in _fields(x)}.get(1, 0))
            locs[lid] = fids
        elif field == 5:
            d = {f: x for f, _, x in _fields(v)}
            funcs[d.get(1, 0)] = d.get(2, 0)
        elif field == 6:
            strings.append(bytes(v).decode())
        elif field == 9:
            prof["time_nanos"] = _signed(v)
        elif field == 10:
            prof["duration_nanos"] = _signed(v)
        elif field == 11:
            d = {f: x for f, _, x in _fields(v)}
            prof["period_type"] = (d.get(1, 0), d.get(2, 0))
        elif field == 12:
            prof["period"] = _signed(v)
    s = lambda i: strings[i] if i < len(strings) else "?"
    prof["sample_types"] = [(s(a), s(b)) for a, b in types]
    if prof["period_type"]:
        prof["period_type"] = tuple(s(x) for x in prof["period_type"])
    samples = []
    for ids, vals in raw_samples:
        frames = []
        for lid in ids:  # leaf first; inlined functions of a location are leaf first too
            for fid in locs.get(lid, []):
                frames.append(s(funcs.get(fid, 0)))
        samples.append((list(reversed(frames)), vals))
    prof["samples"] = samples
    return prof
