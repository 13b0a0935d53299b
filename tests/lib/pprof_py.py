# SPDX-License-Identifier: Apache-2.0
# pprof (perftools.profiles.Profile) writer and reader in plain Python (stdlib only, protobuf
# by hand): build test uploads with chosen stacks and values, and read profiles back.
#
#   data = build([(["main", "work"], 100)], sample_types=(("cpu", "nanoseconds"),))
#   prof = parse(data)            # raw or gzipped
#   prof.total("cpu"), prof.samples[0].root_first, prof.samples[0].labels
import gzip


# ---- protobuf wire format --------------------------------------------------------------

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


def field_varint(field, n):
    return _key(field, 0) + _varint(n)


def field_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return _key(field, 2) + _varint(len(data)) + data


def field_packed(field, values):
    return field_bytes(field, b"".join(_varint(v) for v in values))


def _int(field, n):
    """An optional integer field: proto3 leaves zero out."""
    return field_varint(field, n) if n else b""


def _read_varint(buf, pos):
    n = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos


def _fields(buf):
    """Yields (field number, wire type, value) of one message; value is int or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            val, pos = _read_varint(buf, pos)
        elif wire == 1:
            val, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 2:
            n, pos = _read_varint(buf, pos)
            val, pos = bytes(buf[pos:pos + n]), pos + n
        elif wire == 5:
            val, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        else:
            raise ValueError("unsupported wire type %d" % wire)
        yield num, wire, val


def _signed(n):
    return n - (1 << 64) if n >= 1 << 63 else n


def _ints(wire, val):
    """A repeated integer field, packed (bytes) or not (int), as signed int64s."""
    if wire != 2:
        return [_signed(val)]
    out, pos = [], 0
    while pos < len(val):
        n, pos = _read_varint(val, pos)
        out.append(_signed(n))
    return out


def _message(buf, ints=(), repeated=()):
    """A flat message as a dict: field -> int/bytes, lists for repeated fields."""
    msg = {n: [] for n in repeated}
    for num, wire, val in _fields(buf):
        if num in ints:
            msg.setdefault(num, []).extend(_ints(wire, val))
        elif num in repeated:
            msg[num].append(val)
        else:
            msg[num] = val
    return msg


# ---- writing ---------------------------------------------------------------------------

class _Strings:
    def __init__(self):
        self.table = [""]
        self.index = {"": 0}

    def __call__(self, s):
        if s not in self.index:
            self.index[s] = len(self.table)
            self.table.append(s)
        return self.index[s]


def _frame_key(frame):
    """A frame is a name (str or bytes), or (name, file, line) for a location with a line, or
    (name, file, line, build_id, address) for one in a mapping with that build-id at that
    address (line 0: no line, as the agent sends its native frames)."""
    if isinstance(frame, tuple):
        return tuple(frame) + (None, 0)[len(frame) - 3:] if len(frame) < 5 else tuple(frame)
    return (frame, None, 0, None, 0)


def build(samples, sample_types=(("cpu", "nanoseconds"),), period_type=None, period=0,
          time_nanos=0, duration_nanos=0, labels=None):
    """samples: iterable of (frames root first, value or [values][, labels]); frames are str or
    bytes (bytes go into the string table as they are) or tuples (_frame_key); a sample's own
    labels dict replaces `labels`. Returns the raw serialized Profile."""
    strings = _Strings()
    locs = {}  # frame key -> location id
    funcs = {}  # (name, file) -> function id
    mappings = {None: 1}  # build-id -> mapping id; 1 is the default mapping "app"
    out = bytearray()
    for t, u in sample_types:
        out += field_bytes(1, _int(1, strings(t)) + _int(2, strings(u)))
    for item in samples:
        frames, values = item[0], item[1]
        sample_labels = item[2] if len(item) > 2 else labels
        if isinstance(values, int):
            values = [values]
        ids = []
        for frame in reversed(list(frames)):  # pprof lists locations leaf first
            key = _frame_key(frame)
            if key not in locs:
                locs[key] = len(locs) + 1
                funcs.setdefault((key[0], key[1]), len(funcs) + 1)
                mappings.setdefault(key[3], len(mappings) + 1)
            ids.append(locs[key])
        body = field_packed(1, ids) if ids else b""
        body += field_packed(2, values) if values else b""
        for k, v in (sample_labels or {}).items():  # an int is a numeric label (num)
            value = _int(3, v) if isinstance(v, int) else _int(2, strings(v))
            body += field_bytes(3, _int(1, strings(k)) + value)
        out += field_bytes(2, body)
    for build_id, mid in mappings.items():
        out += field_bytes(3, _int(1, mid) + _int(2, 0x1000) + _int(3, 0x100000) +
                           _int(5, strings("app" if build_id is None else "lib-" + build_id)) +
                           (_int(6, strings(build_id)) if build_id else b"") + _int(7, 1))
    for key, lid in locs.items():
        name, file, line, build_id, address = key
        out += field_bytes(4, _int(1, lid) + _int(2, mappings[build_id]) +
                           (_int(3, address) if address else b"") +
                           field_bytes(4, _int(1, funcs[(name, file)]) +
                                       (_int(2, line) if line else b"")))
    for (name, file), fid in funcs.items():
        out += field_bytes(5, _int(1, fid) + _int(2, strings(name)) + _int(3, strings(name)) +
                           (_int(4, strings(file)) if file else b""))
    pt = period_type or sample_types[0]
    tail = (_int(9, time_nanos) + _int(10, duration_nanos) +
            field_bytes(11, _int(1, strings(pt[0])) + _int(2, strings(pt[1]))) +
            _int(12, period))
    for s in strings.table:  # last, so that every strings() call above has happened
        out += field_bytes(6, s)
    return bytes(out + tail)


def build_gz(*args, **kwargs):
    return gzip.compress(build(*args, **kwargs))


def gzipped(data):
    return gzip.compress(data)


# ---- reading ---------------------------------------------------------------------------

class Sample:
    def __init__(self, stack, values, labels, modules, function_ids=None):
        self.stack = stack        # function names, leaf first
        self.modules = modules    # mapping filename per frame ("" when none)
        self.function_ids = function_ids or []  # pprof Function id per frame (0 when none)
        self.values = values      # one per sample type
        self.labels = labels      # key -> str or int
        self.addresses = []       # Location.address per frame (0 when none)
        self.build_ids = []       # its Mapping's build-id per frame ("" when none)

    @property
    def root_first(self):
        return list(reversed(self.stack))

    def __repr__(self):
        return "Sample(%r, %r, %r)" % (self.stack, self.values, self.labels)


class Profile:
    def __init__(self):
        self.sample_types = []    # [(type, unit)]
        self.samples = []
        self.mappings = []        # dicts: id, start, limit, offset, filename, build_id
        self.functions = {}       # id -> name
        self.function_files = {}  # id -> source file name ("" when none)
        self.time_nanos = self.duration_nanos = self.period = 0
        self.period_type = None
        self.strings = []

    def value_index(self, type_name, unit=None):
        for i, (t, u) in enumerate(self.sample_types):
            if t == type_name and unit in (None, u):
                return i
        raise ValueError("no sample type %s%s" % (type_name, "/" + unit if unit else ""))

    def total(self, type_name, unit=None):
        i = self.value_index(type_name, unit)
        return sum(s.values[i] for s in self.samples)


def parse(data):
    """A (possibly gzipped) serialized Profile -> Profile."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    top = {n: [] for n in (1, 2, 3, 4, 5, 6, 11)}
    p = Profile()
    for num, _, val in _fields(data):
        if num in top:
            top[num].append(val)
        elif num == 9:
            p.time_nanos = _signed(val)
        elif num == 10:
            p.duration_nanos = _signed(val)
        elif num == 12:
            p.period = _signed(val)
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
        p.function_files[m.get(1, 0)] = s[m.get(4, 0)]
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
        ids = [_message(line).get(1, 0) for line in m[4]]
        names = [p.functions.get(i, "?") for i in ids]
        # Inlined: line[0] is the innermost function, the last one its caller (leaf first).
        if not names:
            names, ids = ["0x%x" % m.get(3, 0)], [0]
        mapping = mappings.get(m.get(2, 0), {})
        module = mapping.get("filename", "")
        locations[m.get(1, 0)] = (names, module, ids, m.get(3, 0), mapping.get("build_id", ""))
    for sb in top[2]:
        m = _message(sb, ints=(1, 2), repeated=(3,))
        stack, modules, function_ids, addresses, build_ids = [], [], [], [], []
        for loc in m.get(1, []):
            names, module, ids, address, build_id = locations.get(loc, (["?"], "", [0], 0, ""))
            stack.extend(names)
            modules.extend([module] * len(names))
            function_ids.extend(ids)
            addresses.extend([address] * len(names))
            build_ids.extend([build_id] * len(names))
        labels = {}
        for lb in m[3]:
            lm = _message(lb)
            key = s[lm.get(1, 0)]
            labels[key] = s[lm[2]] if lm.get(2) else lm.get(3, 0)
        p.samples.append(Sample(stack, m.get(2, []), labels, modules, function_ids))
        p.samples[-1].addresses, p.samples[-1].build_ids = addresses, build_ids
    return p


def parse_file(path):
    with open(path, "rb") as f:
        return parse(f.read())
