/* SPDX-License-Identifier: Apache-2.0 */
/* Upload ids claimed in a shared control-plane database, for a profile store that cannot
 * remember them in the transaction of its own write (ClickHouse has none): the claim's
 * transaction stays open while the profile store writes and commits only after it succeeded,
 * so that a failed write frees the ids for the retry and a concurrent claim of the same id by
 * another collector waits for the outcome. Implemented by collector/postgresql/. */
#ifndef ROOTTRACE_UPLOAD_LEDGER_H
#define ROOTTRACE_UPLOAD_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct upload_ledger;
struct upload_claim; /* one open claim transaction */

struct upload_ledger_ops {
	void (*close)(struct upload_ledger *l);
	/* Claims the n (environment, upload id) pairs in one transaction left open: on 0,
	 * ret_duplicate[i] is true when ids[i] was already stored (or repeats an earlier pair of
	 * this claim). -EIO when the database cannot be reached. */
	int (*claim)(struct upload_ledger *l, const char *const *environments,
		     const char *const *ids, size_t n, bool *ret_duplicate,
		     struct upload_claim **ret);
	/* Ends the claim: commit makes the ids permanent (0 or -EIO), abort forgets them. */
	int (*commit)(struct upload_claim *c);
	void (*abort)(struct upload_claim *c);
	/* Line detail written apart from the claim's outcome (ClickHouse's profile_lines): notes,
	 * committed at once on a connection of its own, that the n uploads' lines are about to be
	 * written, so that a later try of one knows an earlier try may have stored them. 0 or
	 * -EIO (then the lines must not be written). */
	int (*note_line_tries)(struct upload_ledger *l, const char *const *environments,
			       const char *const *ids, size_t n);
	/* In claim c: whether an earlier try noted each pair's lines (ret_tried[i]). 0 or -EIO. */
	int (*line_tries)(struct upload_claim *c, const char *const *environments,
			  const char *const *ids, size_t n, bool *ret_tried);
	/* Forgets ids (and line tries) accepted before cutoff; 0 or -EIO. */
	int (*expire)(struct upload_ledger *l, int64_t cutoff);
	/* Work one collector of the fleet does at a time (a tier build): the lock named key,
	 * held by a transaction left open, so that it is released when the holder ends it with
	 * abort() or dies (its connection closes). -EBUSY when another holds it. */
	int (*try_lock)(struct upload_ledger *l, int64_t key, struct upload_claim **ret);
};

struct upload_ledger {
	const struct upload_ledger_ops *ops;
};

#endif
