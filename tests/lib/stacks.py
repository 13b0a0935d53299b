# SPDX-License-Identifier: Apache-2.0
# Reading recorded stacks in BPF tests: sample weights and shares, frames in order from leaf
# to root, versioned libc names, and a short readable form of stacks for failure messages.


def base_name(name):
    return name.split("@")[0]  # "__libc_start_main@@GLIBC_2.34" as .symtab versions it


def user_frames(sample):
    """Function names of the user part of a stack, leaf first."""
    return [f for f, m in zip(sample.stack, sample.modules) if m != "[kernel]"]


def weight(samples):
    return sum(s.values[0] for s in samples)


def share(good, all_):
    total = weight(all_)
    return weight(good) / total if total else 0.0


def ordered(frames, names):
    """True when names appear in frames in this order (leaf to root), not necessarily adjacent."""
    i = 0
    for f in frames:
        if i < len(names) and base_name(f) == names[i]:
            i += 1
    return i == len(names)


def show(samples, n=5):
    """The first n stacks, one a line; C++ argument lists left out."""
    return "\n".join(" <- ".join(f.split("(")[0] for f in s.stack) for s in samples[:n])
