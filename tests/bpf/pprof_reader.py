# SPDX-License-Identifier: Apache-2.0
# Minimal pprof (perftools.profiles.Profile) reader for tests, Python stdlib only:
# gunzip if needed, decode the protobuf wire format, resolve string/function/location ids.
import gzip


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf):
    """Yields (field number, wire type, value) for one message."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, i = _varint(buf, i)
        elif wt == 1:
            val, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 2:
            n, i = _varint(buf, i)
            val, i = buf[i:i + n], i + n
        elif wt == 5:
            val, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield num, wt, val


def _ints(wt, val):
    """A repeated integer field, packed or not."""
    if wt != 2:
        return [val]
    out, i = [], 0
    while i < len(val):
        v, i = _varint(val, i)
        out.append(v)
    return out


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


class Sample:
    def __init__(self, frames, modules, values, labels):
        self.frames = frames      # function names, leaf first
        self.modules = modules    # mapping file per frame ("" when none)
        self.values = values
        self.labels = labels      # key -> str or int


class Profile:
    def __init__(self):
        self.sample_types = []
        self.samples = []
        self.period_type = None
        self.period = 0
        self.time_nanos = 0
        self.duration_nanos = 0
        self.mappings = {}

    def value_index(self, type_, unit):
        return self.sample_types.index((type_, unit))


def _value_type(buf, strings):
    t = u = 0
    for num, _, val in _fields(buf):
        if num == 1:
            t = val
        elif num == 2:
            u = val
    return (t, u)


def parse(data):
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    raw_samples, raw_types, strings = [], [], []
    mappings, locations, functions = {}, {}, {}
    prof = Profile()
    period_type = None
    for num, wt, val in _fields(data):
        if num == 1:
            raw_types.append(val)
        elif num == 2:
            raw_samples.append(val)
        elif num == 3:
            m = {}
            for n, _, v in _fields(val):
                m[n] = v
            mappings[m.get(1, 0)] = (m.get(5, 0), m.get(6, 0))
        elif num == 4:
            loc = {"lines": []}
            for n, w, v in _fields(val):
                if n == 1:
                    loc["id"] = v
                elif n == 2:
                    loc["mapping"] = v
                elif n == 4:
                    line = dict((ln, lv) for ln, _, lv in _fields(v))
                    loc["lines"].append(line.get(1, 0))
            locations[loc.get("id", 0)] = loc
        elif num == 5:
            f = dict((n, v) for n, _, v in _fields(val))
            functions[f.get(1, 0)] = f.get(2, 0)
        elif num == 6:
            strings.append(val.decode("utf-8", "replace"))
        elif num == 9:
            prof.time_nanos = _signed(val)
        elif num == 10:
            prof.duration_nanos = _signed(val)
        elif num == 11:
            period_type = val
        elif num == 12:
            prof.period = _signed(val)
    prof.sample_types = [tuple(strings[x] for x in _value_type(t, strings)) for t in raw_types]
    if period_type is not None:
        prof.period_type = tuple(strings[x] for x in _value_type(period_type, strings))
    prof.mappings = {k: (strings[f], strings[b]) for k, (f, b) in mappings.items()}
    for raw in raw_samples:
        loc_ids, values, labels = [], [], {}
        for n, w, v in _fields(raw):
            if n == 1:
                loc_ids.extend(_ints(w, v))
            elif n == 2:
                values.extend(_signed(x) for x in _ints(w, v))
            elif n == 3:
                lab = dict((ln, lv) for ln, _, lv in _fields(v))
                key = strings[lab.get(1, 0)]
                labels[key] = strings[lab[2]] if lab.get(2) else lab.get(3, 0)
        frames, modules = [], []
        for lid in loc_ids:
            loc = locations[lid]
            names = [strings[functions[f]] for f in loc["lines"]] or ["[unknown]"]
            mod = prof.mappings.get(loc.get("mapping", 0), ("", ""))[0]
            for name in names:
                frames.append(name)
                modules.append(mod)
        prof.samples.append(Sample(frames, modules, values, labels))
    return prof


def read(path):
    with open(path, "rb") as f:
        return parse(f.read())
