# SPDX-License-Identifier: Apache-2.0
# Ruby frames from the node agent, on the real interpreter (Debian's ruby3.1 with
# libruby-3.1.so, started without flags): a hot method under a known caller named in order
# (Class#method, Class.method, blocks in them, code a method evals),
# vm_exec_core replaced by the Ruby frames it runs, four threads each named, a process started
# after the agent, one that exits before its window is named, one first sampled while its
# loader runs, and one in its own mount namespace.
import os
import subprocess
import time

import harness
from runtime_case import RuntimeCase, frames_of, function_files, of_pid, parent_of, share
from test_record import BUILD

RUBY = "/usr/bin/ruby3.1"
LIBRUBY = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"

HOT = """
module Shop
  class Cart
    def hot(n)
      s = 0
      i = 0
      while i < n
        s += i * i
        i += 1
      end
      s
    end

    def self.caller_of_hot
      CART.hot(20_000)
    end
  end
end

CART = Shop::Cart.new
loop { Shop::Cart.caller_of_hot }
"""

SHORT = """
def hot(n)
  s = 0
  i = 0
  while i < n
    s += i * i
    i += 1
  end
  s
end

def caller_of_hot
  hot(20_000)
end

t = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 2
caller_of_hot while Process.clock_gettime(Process::CLOCK_MONOTONIC) < t
"""

THREADS = """
def spin0; loop { x = 0; 2000.times { |i| x += i } }; end
def spin1; loop { x = 0; 2000.times { |i| x += i } }; end
def spin2; loop { x = 0; 2000.times { |i| x += i } }; end
def spin3; loop { x = 0; 2000.times { |i| x += i } }; end

threads = [:spin0, :spin1, :spin2, :spin3].each_with_index.map do |m, k|
  Thread.new { Thread.current.name = "worker#{k}"; send(m) }
end
threads.each(&:join)
"""


# rubygems evals each gemspec (at every start, for the default gems): the eval'd code's frame
# runs in Gem::Specification.load's method entry but not its iseq
GEMSPEC = """
spec = File.join(__dir__, "shop.gemspec")
File.write(spec, <<~G)
  Gem::Specification.new do |s|
    s.name = "shop"
    s.version = "1.0.0"
    s.summary = "a gemspec loaded in a loop"
    s.authors = ["shop"]
    s.files = ["lib/shop.rb"]
  end
G
cache = Gem::Specification.instance_variable_get(:@load_cache)
loop { cache.clear; Gem::Specification.load(spec) }
"""


def ruby_frames(sample):
    """The sample's Ruby frames, leaf first (their mapping is [ruby])."""
    return frames_of(sample, "[ruby]")


class RubyFrames(RuntimeCase):
    BINARY = RUBY
    PREFIX = "rt-ruby-"
    SCRIPTS = {"hot.rb": HOT, "short.rb": SHORT, "threads.rb": THREADS, "gemspec.rb": GEMSPEC}

    def test_hot_method_and_its_caller_with_record_pid(self):
        samples, prof, err = self.record_alone("hot.rb", 6)
        named = share(samples, lambda s: "Shop::Cart#hot" in ruby_frames(s))
        under = share(samples, lambda s: parent_of(s, "Shop::Cart#hot") ==
                      "Shop::Cart.caller_of_hot")
        self.assertGreaterEqual(named, 0.95, err)
        self.assertGreaterEqual(under, 0.90, err)
        # Ruby frames in call order: an instance method (Class#method) under a singleton
        # method (Class.method) under the block that loop yields to
        order = share(samples, lambda s: ruby_frames(s)[:3] == [
            "Shop::Cart#hot", "Shop::Cart.caller_of_hot", "block in <main>"])
        self.assertGreaterEqual(order, 0.90, err)
        self.assertGreaterEqual(share(samples, lambda s: "<main>" in ruby_frames(s)), 0.90)
        # the file goes into Function.filename; rb_vm_exec stands for the frames it runs
        files = function_files(prof, samples, "Shop::Cart#hot")
        self.assertEqual(files, {os.path.join(self.tmp, "hot.rb")})
        self.assertLess(share(samples, lambda s: "rb_vm_exec" in s.stack), 0.05)
        self.assertIn("ruby: 1 processes attached", err)

    def test_four_threads_each_named(self):
        samples, prof, err = self.record_alone("threads.rb", 6, settle=1)
        for k in range(4):
            mine = [s for s in samples if s.labels.get("thread") == "worker%d" % k]
            self.assertGreater(len(mine), 0, "worker%d has no samples\n%s" % (k, err))
            # top-level methods belong to Object; the blocks they run name them
            own = share(mine, lambda s: "Object#spin%d" % k in ruby_frames(s))
            block = share(mine, lambda s: "block in Object#spin%d" % k in ruby_frames(s))
            inner = share(mine, lambda s: "block (2 levels) in Object#spin%d" % k
                          in ruby_frames(s))
            other = share(mine, lambda s: any("Object#spin%d" % j in ruby_frames(s)
                                              for j in range(4) if j != k))
            # the GVL: a thread waiting for it is sampled too, but its frames are its own
            self.assertGreaterEqual(own, 0.90, "worker%d\n%s" % (k, err))
            self.assertGreaterEqual(block, 0.90, "worker%d\n%s" % (k, err))
            # the times block is inside Integer#times (C) about half the time
            self.assertGreaterEqual(inner, 0.25, "worker%d\n%s" % (k, err))
            self.assertEqual(other, 0.0)

    def test_a_process_started_after_the_agent(self):
        rec, out = self.record(6)
        time.sleep(1)
        p = self.start(RUBY, os.path.join(self.tmp, "hot.rb"))
        time.sleep(4)
        prof, err = self.finish(rec, out)
        self.stop(p)
        samples = of_pid(prof, p.pid)
        whole = [s for s in samples if "_start" in s.stack]
        self.assertGreater(len(whole), 0, err)
        under = share(whole, lambda s: parent_of(s, "Shop::Cart#hot") ==
                      "Shop::Cart.caller_of_hot")
        self.assertGreaterEqual(under, 0.90, err)

    def test_a_process_that_exits_before_the_window_is_named_keeps_its_names(self):
        warm = self.start(RUBY, os.path.join(self.tmp, "hot.rb"))
        rec, out = self.record(8)
        time.sleep(2)  # libruby's and libc's tables built (for warm), kept by build-id
        p = self.start(RUBY, os.path.join(self.tmp, "short.rb"))
        p.wait(30)  # exits after 2 s, long before the window is named
        prof, err = self.finish(rec, out)
        self.stop(warm)
        samples = of_pid(prof, p.pid)
        whole = [s for s in samples if "_start" in s.stack]
        # named while it lived: no Ruby frame left [unknown] (start-up's require frames too)
        self.assertLessEqual(share(whole, lambda s: "[unknown]" in ruby_frames(s)), 0.02, err)
        # top-level methods are Object's
        hot = [s for s in whole if "Object#hot" in ruby_frames(s)]
        self.assertGreater(len(hot), 0, err)
        under = share(hot, lambda s: parent_of(s, "Object#hot") == "Object#caller_of_hot")
        self.assertGreaterEqual(under, 0.90, err)

    def test_code_a_method_evals_is_named_as_the_method(self):
        samples, prof, err = self.record_alone("gemspec.rb", 4)
        self.assertLessEqual(share(samples, lambda s: "[unknown]" in ruby_frames(s)), 0.02, err)
        init = [s for s in samples if "Gem::Specification#initialize" in ruby_frames(s)]
        self.assertGreater(len(init), 0, err)
        # the gemspec's own frame, between Specification.new (Class#new: native frames) and
        # the load that evals it
        def ruby_parent(s):
            r = ruby_frames(s)
            i = r.index("Gem::Specification#initialize")
            return r[i + 1] if i + 1 < len(r) else None
        self.assertGreaterEqual(share(init, lambda s: ruby_parent(s) == "Gem::Specification.load"),
                                0.90, err)

    def loader_caught(self, step):
        """short.rb started after the agent, its loader held busy for a second at step (an
        LD_AUDIT fixture): its first samples, which announce it, are taken in ld.so. Its
        whole stacks must name its hot method under its caller all the same."""
        audit = os.path.join(BUILD, "fixtures", "libslowld-%s.so" % step)
        self.assertTrue(os.path.exists(audit), audit)
        rec, out = self.record(8)
        time.sleep(1)
        p = subprocess.Popen([RUBY, os.path.join(self.tmp, "short.rb")],
                             env=dict(os.environ, LD_AUDIT=audit),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(p)
        p.wait(30)  # a second in the loader, then two running Ruby
        prof, err = self.finish(rec, out)
        # whole: its mapping table was published again with the libraries mapped since
        whole = [s for s in of_pid(prof, p.pid) if "_start" in s.stack]
        self.assertGreater(len(whole), 0, err)
        hot = [s for s in whole if "Object#hot" in ruby_frames(s)]
        self.assertGreater(len(hot), 0, err)
        under = share(hot, lambda s: parent_of(s, "Object#hot") == "Object#caller_of_hot")
        self.assertGreaterEqual(under, 0.90, err)

    def test_a_process_announced_before_its_loader_mapped_libruby(self):
        # the ruby executable mapped, libruby not yet: it is captured again once mapped
        self.loader_caught("search")

    def test_a_process_announced_before_its_loader_relocated_libruby(self):
        # libruby mapped, its TLS module id not written yet (the loader relocates after
        # mapping every library): it is captured again once written
        self.loader_caught("open")

    def test_a_process_in_its_own_mount_namespace(self):
        # a libruby only its namespace has: a private tmpfs holding copies of ruby and libruby
        ns_dir = os.path.join(self.tmp, "ns")
        os.mkdir(ns_dir)
        script = ("mount -t tmpfs none {d} && cp {ruby} {d}/ruby && cp {lib} {d}/ && "
                  "cp {src} {d}/nshot.rb && LD_LIBRARY_PATH={d} exec {d}/ruby {d}/nshot.rb"
                  ).format(d=ns_dir, ruby=RUBY, lib=LIBRUBY, src=os.path.join(self.tmp, "hot.rb"))
        rec, out = self.record(7)
        in_ns = self.start("unshare", "-m", "--propagation", "private", "sh", "-c", script)
        time.sleep(6)
        self.assertIsNone(in_ns.poll(), "the namespaced interpreter did not start")
        self.assertFalse(os.path.exists(os.path.join(ns_dir, os.path.basename(LIBRUBY))))
        prof, err = self.finish(rec, out)
        self.stop(in_ns)
        samples = of_pid(prof, in_ns.pid)
        whole = [s for s in samples if "_start" in s.stack]
        self.assertGreater(len(whole), 0, err)
        self.assertGreaterEqual(share(whole, lambda s: parent_of(s, "Shop::Cart#hot") ==
                                      "Shop::Cart.caller_of_hot"), 0.90, err)
        files = {prof.function_files[i] for s in whole for f, i in zip(s.stack, s.function_ids)
                 if f == "Shop::Cart#hot"}
        self.assertEqual(files, {os.path.join(ns_dir, "nshot.rb")})


if __name__ == "__main__":
    harness.main()
