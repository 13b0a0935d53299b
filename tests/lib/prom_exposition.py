# SPDX-License-Identifier: Apache-2.0
# A strict parser of the Prometheus text exposition format (0.0.4), for tests of /metrics:
# every line is a HELP, a TYPE, another comment, blank, or a sample; each sample belongs to a
# family with HELP and TYPE given once, before its samples; no series appears twice.
import math
import re

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_SAMPLE = re.compile(r"^(%s)(\{(.*)\})? (\S+)( -?\d+)?$" % NAME)
_LABEL_PAIR = re.compile(r'(%s)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)' % LABEL)
_TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}
_SUFFIXES = {"counter": ("_total", ""), "gauge": ("",), "untyped": ("",),
             "histogram": ("_bucket", "_sum", "_count"), "summary": ("", "_sum", "_count")}


class ExpositionError(ValueError):
    pass


def _labels(text, lineno):
    labels, pos = {}, 0
    while pos < len(text):
        m = _LABEL_PAIR.match(text, pos)
        if not m:
            raise ExpositionError("line %d: bad label set {%s}" % (lineno, text))
        if m.group(1) in labels:
            raise ExpositionError("line %d: label %s twice" % (lineno, m.group(1)))
        labels[m.group(1)] = m.group(2)
        pos = m.end()
    return labels


def _value(text, lineno):
    if text in ("NaN", "+Inf", "-Inf"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    try:
        v = float(text)
    except ValueError:
        raise ExpositionError("line %d: value %r is not a number" % (lineno, text))
    if math.isnan(v) or math.isinf(v):
        raise ExpositionError("line %d: spell NaN/+Inf/-Inf exactly, not %r" % (lineno, text))
    return v


def _family_of(name, families):
    for fam, (ftype, _) in families.items():
        for suffix in _SUFFIXES[ftype]:
            if name == fam + suffix:
                return fam
    return None


def parse(text):
    """{(name, frozenset(labels.items())): value}; raises ExpositionError on any fault."""
    families = {}  # name -> (type, help)
    helps, samples = {}, {}
    if text and not text.endswith("\n"):
        raise ExpositionError("the exposition must end with a newline")
    for lineno, line in enumerate(text.split("\n")[:-1], 1):
        if not line.strip():
            continue
        if line.startswith("# HELP "):
            parts = line[7:].split(" ", 1)
            if not re.fullmatch(NAME, parts[0]) or parts[0] in helps:
                raise ExpositionError("line %d: bad or repeated HELP" % lineno)
            helps[parts[0]] = parts[1] if len(parts) > 1 else ""
            continue
        if line.startswith("# TYPE "):
            parts = line[7:].split(" ")
            if (len(parts) != 2 or not re.fullmatch(NAME, parts[0]) or parts[1] not in _TYPES
                    or parts[0] in families):
                raise ExpositionError("line %d: bad or repeated TYPE: %s" % (lineno, line))
            if any(fam == parts[0] for fam, _ in samples):
                raise ExpositionError("line %d: TYPE after samples of %s" % (lineno, parts[0]))
            families[parts[0]] = (parts[1], helps.get(parts[0]))
            continue
        if line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ExpositionError("line %d: not a sample: %r" % (lineno, line))
        name = m.group(1)
        fam = _family_of(name, families)
        if fam is None:
            raise ExpositionError("line %d: sample %s has no TYPE before it" % (lineno, name))
        if families[fam][1] is None:
            raise ExpositionError("line %d: family %s has no HELP before its TYPE" % (lineno, fam))
        key = (name, frozenset(_labels(m.group(3) or "", lineno).items()))
        if key in samples:
            raise ExpositionError("line %d: series %s%s twice" % (lineno, name, dict(key[1])))
        samples[key] = _value(m.group(4), lineno)
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))
