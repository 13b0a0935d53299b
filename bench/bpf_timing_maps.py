# SPDX-License-Identifier: Apache-2.0
# The prof_timing maps of a -DPROFILE_TIMING build's record, found by its file descriptors:
# shared by bench/bpf_phases.py and bench/bpf_sample_ab.py.
import json, os, re, subprocess


def timing_ids():
    """Every loaded prof_timing map's id (another timing build's too: bpftool names all)."""
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True).stdout
    return {m["id"] for m in json.loads(out or "[]") if m.get("name") == "prof_timing"}


def timing_maps_of(pid):
    """The prof_timing maps process pid holds (its fds' fdinfo name the map ids): other
    engineers' timing builds may run beside it, and bpftool names all of them."""
    held = set()
    try:
        fds = os.listdir("/proc/%d/fdinfo" % pid)
    except OSError:
        return held
    for fd in fds:
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                m = re.search(r"^map_id:\s*(\d+)", f.read(), re.M)
        except OSError:
            continue
        if m:
            held.add(int(m.group(1)))
    return held & timing_ids() if held else held
