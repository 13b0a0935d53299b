// SPDX-License-Identifier: Apache-2.0
// A small Node.js service profiled by Pyroscope's own SDK (@pyroscope/nodejs), as a user would
// set it up, pointed at a RootTrace collector. It burns wall time in one known function and
// keeps memory allocated by another, then stops the SDK (which sends its last profiles).
//   node app.js SERVER_ADDRESS TOKEN APP_NAME SECONDS [VERSION]
'use strict';
const Pyroscope = require('@pyroscope/nodejs');

const [serverAddress, token, appName, seconds, version] = process.argv.slice(2);
const tags = { region: 'eu-west', pod: 'checkout-7d9f' };
if (version) tags.service_version = version;

Pyroscope.init({
  serverAddress,
  appName,
  basicAuthUser: 'roottrace',
  basicAuthPassword: token,
  flushIntervalMs: 4000,
  tags,
  heap: { samplingIntervalBytes: 64 * 1024 },
});
Pyroscope.start();

const retained = [];

// 32 MiB kept: several times what the hot loop's short-lived numbers can leave in the heap
// profile before a collection (about 9 MB were seen), so this stays the heap's top function.
function rootTraceKeepsMemory() {
  for (let i = 0; i < 64; i++) retained.push(new Array(64 * 1024).fill(i));
}

// Date.now() is read once per 4,096 steps: each read is a new heap number while unoptimised.
function rootTraceHotFunction(until) {
  let x = 0;
  while (Date.now() < until) for (let i = 0; i < 4096; i++) x += Math.sqrt(x + 1);
  return x;
}

rootTraceKeepsMemory();
const end = Date.now() + Number(seconds) * 1000;
function tick() {
  if (Date.now() >= end) {
    Pyroscope.stop().then(() => {
      console.log('stopped, retained arrays:', retained.length);
      process.exit(0);
    });
    return;
  }
  rootTraceHotFunction(Date.now() + 50);
  setImmediate(tick);
}
tick();
