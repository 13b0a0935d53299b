# SPDX-License-Identifier: Apache-2.0
# Minimal pprof (perftools.profiles.Profile) encoder and decoder in pure Python for tests:
# build profiles with chosen stacks and values, or read a real one's sample types and totals.
import gzip as _gzip


def _varint(n):
    if n < 0:
        n += 1 << 64
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


def field_varint(field, n):
    return _key(field, 0) + _varint(n)


def field_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _key(field, 2) + _varint(len(data)) + data


def field_packed(field, values):
    return field_bytes(field, b"".join(_varint(v) for v in values))


def encode(sample_types, samples, time_nanos=0, duration_nanos=0, period_type=None, period=0):
    """sample_types: [(type, unit)]; samples: [(frames root first, [values])]."""
    strings = [""]
    index = {"": 0}

    def s(text):
        if text not in index:
            index[text] = len(strings)
            strings.append(text)
        return index[text]

    functions, locations = {}, []
    out = bytearray()
    for t, u in sample_types:
        out += field_bytes(1, field_varint(1, s(t)) + field_varint(2, s(u)))
    for frames, values in samples:
        ids = []
        for name in reversed(frames):  # pprof lists locations leaf first
            if name not in functions:
                functions[name] = len(functions) + 1
                locations.append(functions[name])
            ids.append(functions[name])
        out += field_bytes(2, field_packed(1, ids) + field_packed(2, values))
    for name, fid in functions.items():
        out += field_bytes(4, field_varint(1, fid) + field_bytes(4, field_varint(1, fid)))
        out += field_bytes(5, field_varint(1, fid) + field_varint(2, s(name)))
    if time_nanos:
        out += field_varint(9, time_nanos)
    if duration_nanos:
        out += field_varint(10, duration_nanos)
    if period_type:
        out += field_bytes(11, field_varint(1, s(period_type[0])) + field_varint(2, s(period_type[1])))
    if period:
        out += field_varint(12, period)
    # the string table goes last so every s() call above has happened
    for text in strings:
        out += field_bytes(6, text)
    return bytes(out)


def _read_varint(buf, pos):
    shift = n = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos


def _fields(buf):
    pos = 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = _read_varint(buf, pos)
        elif wire == 2:
            n, pos = _read_varint(buf, pos)
            v = buf[pos:pos + n]
            pos += n
        elif wire == 1:
            v = buf[pos:pos + 8]
            pos += 8
        elif wire == 5:
            v = buf[pos:pos + 4]
            pos += 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        yield field, wire, v


def _ints(wire, v):
    if wire == 0:
        return [v - (1 << 64) if v >= 1 << 63 else v]
    out, pos = [], 0
    while pos < len(v):
        n, pos = _read_varint(v, pos)
        out.append(n - (1 << 64) if n >= 1 << 63 else n)
    return out


def decode(data):
    """Sample types, per-sample values and time of a (possibly gzipped) pprof."""
    if data[:2] == b"\x1f\x8b":
        data = _gzip.decompress(data)
    strings, types, samples, time_nanos = [], [], [], 0
    for field, wire, v in _fields(data):
        if field == 6:
            strings.append(bytes(v).decode("utf-8", "replace"))
        elif field == 1:
            vt = {f: x for f, _, x in _fields(v)}
            types.append((vt.get(1, 0), vt.get(2, 0)))
        elif field == 2:
            values = []
            for f, w, x in _fields(v):
                if f == 2:
                    values += _ints(w, x)
            samples.append(values)
        elif field == 9:
            time_nanos = v
    return {
        "sample_types": [(strings[t], strings[u]) for t, u in types],
        "samples": samples,
        "time_nanos": time_nanos,
    }


def total(data, type_name, unit):
    p = decode(data)
    idx = p["sample_types"].index((type_name, unit))
    return sum(s[idx] for s in p["samples"])


def gzipped(data):
    return _gzip.compress(data)
