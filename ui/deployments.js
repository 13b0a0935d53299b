// SPDX-License-Identifier: Apache-2.0
// Deploy markers of the service over the last 30 days, newest first, each with a link to the
// diff around it (fifteen minutes before against fifteen minutes after).
import * as api from "./api.js";
import * as fmt from "./format.js";

export class DeploymentsView {
  constructor(app) { this.app = app; }

  async show() {
    const st = this.app.currentState();
    const d = await api.get("/api/apm/deployments", { service: st.service, time_range: "30d" });
    const body = document.querySelector("#deploys tbody");
    body.replaceChildren();
    document.getElementById("caption").textContent = "Deploy markers of " + st.service +
      " · window " + fmt.windowText(d.window);
    for (const m of d.deployments.slice().reverse()) {
      const tr = document.createElement("tr");
      const go = fmt.el("button", "diff around it");
      go.type = "button";
      go.addEventListener("click", () => this.app.diffAround(m));
      const act = document.createElement("td");
      act.append(go);
      tr.append(fmt.el("td", fmt.utc(m.time)), fmt.el("td", m.service), fmt.el("td", m.version), act);
      body.append(tr);
    }
    if (!d.deployments.length) body.append(fmt.el("tr", "no deploy markers in the last 30 days"));
  }
}
