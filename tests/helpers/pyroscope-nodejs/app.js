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

function rootTraceKeepsMemory() {
  for (let i = 0; i < 64; i++) retained.push(new Array(16 * 1024).fill(i));
}

function rootTraceHotFunction(until) {
  let x = 0;
  while (Date.now() < until) x += Math.sqrt(x + 1);
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
