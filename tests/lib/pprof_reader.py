# SPDX-License-Identifier: Apache-2.0
# Minimal pprof reader for tests (stdlib only): gunzip + protobuf wire parsing of
# perftools.profiles.Profile into samples with function-name stacks, values and labels.
import gzip


def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _fields(buf):
    """Yields (field number, wire type, value); value is int or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wt = key >> 3, key & 7
        if wt == 0:
            val, pos = _varint(buf, pos)
        elif wt == 1:
            val, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wt == 2:
            n, pos = _varint(buf, pos)
            val, pos = bytes(buf[pos:pos + n]), pos + n
        elif wt == 5:
            val, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield num, wt, val


def _ints(wt, val, signed=False):
    """A repeated integer field, packed (bytes) or not (int)."""
    out = []
    if wt == 2:
        pos = 0
        while pos < len(val):
            v, pos = _varint(val, pos)
            out.append(v)
    else:
        out.append(val)
    if signed:
        out = [v - (1 << 64) if v >= 1 << 63 else v for v in out]
    return out


def _message(buf, ints=(), repeated=()):
    """Decodes a flat message: dict field -> int/bytes, lists for repeated fields."""
    msg = {n: [] for n in repeated}
    for num, wt, val in _fields(buf):
        if num in ints:
            msg.setdefault(num, []).extend(_ints(wt, val, signed=True))
        elif num in repeated:
            msg[num].append(val)
        else:
            msg[num] = val
    return msg


class Sample:
    def __init__(self, stack, values, labels, modules):
        self.stack = stack        # function names, leaf first
        self.modules = modules    # mapping filename per frame ("" when none)
        self.values = values      # one per sample type
        self.labels = labels      # key -> str or int

    def __repr__(self):
        return "Sample(%r, %r, %r)" % (self.stack, self.values, self.labels)


class Profile:
    def __init__(self):
        self.sample_types = []    # [(type, unit)]
        self.samples = []
        self.mappings = []        # dicts: id, start, limit, offset, filename, build_id
        self.functions = {}       # id -> name
        self.time_nanos = self.duration_nanos = self.period = 0
        self.period_type = None
        self.strings = []

    def value_index(self, type_name):
        return [t for t, _ in self.sample_types].index(type_name)

    def total(self, type_name):
        i = self.value_index(type_name)
        return sum(s.values[i] for s in self.samples)


def parse(data):
    """Parses a (possibly gzipped) serialized Profile."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    top = {n: [] for n in (1, 2, 3, 4, 5, 6, 11)}
    p = Profile()
    for num, wt, val in _fields(data):
        if num in top:
            top[num].append(val)
        elif num == 9:
            p.time_nanos = val
        elif num == 10:
            p.duration_nanos = val
        elif num == 12:
            p.period = val
    s = p.strings = [b.decode("utf-8", "replace") for b in top[6]]
    for vt in top[1]:
        m = _message(vt)
        p.sample_types.append((s[m.get(1, 0)], s[m.get(2, 0)]))
    for vt in top[11]:
        m = _message(vt)
        p.period_type = (s[m.get(1, 0)], s[m.get(2, 0)])
    for f in top[5]:
        m = _message(f)
        p.functions[m.get(1, 0)] = s[m.get(2, 0)]
    mappings = {}
    for mb in top[3]:
        m = _message(mb)
        d = {"id": m.get(1, 0), "start": m.get(2, 0), "limit": m.get(3, 0),
             "offset": m.get(4, 0), "filename": s[m.get(5, 0)], "build_id": s[m.get(6, 0)]}
        p.mappings.append(d)
        mappings[d["id"]] = d
    locations = {}
    for lb in top[4]:
        m = _message(lb, repeated=(4,))
        names = [p.functions.get(_message(line).get(1, 0), "?") for line in m[4]]
        # Inlined: line[0] is the innermost function, the last one its caller (leaf first).
        if not names:
            names = ["0x%x" % m.get(3, 0)]
        module = mappings.get(m.get(2, 0), {}).get("filename", "")
        locations[m.get(1, 0)] = (names, module)
    for sb in top[2]:
        m = _message(sb, ints=(1, 2), repeated=(3,))
        stack, modules = [], []
        for loc in m.get(1, []):
            names, module = locations.get(loc, (["?"], ""))
            stack.extend(names)
            modules.extend([module] * len(names))
        labels = {}
        for lb in m[3]:
            lm = _message(lb)
            key = s[lm.get(1, 0)]
            labels[key] = s[lm[2]] if lm.get(2) else lm.get(3, 0)
        p.samples.append(Sample(stack, m.get(2, []), labels, modules))
    return p


def parse_file(path):
    with open(path, "rb") as f:
        return parse(f.read())
