// SPDX-License-Identifier: Apache-2.0
/* Day partitions of the ClickHouse tables, dropped whole: the one retention step the rollups,
 * the link store and the stacks dictionary (ch_stacks.c) all take. Depends on ch_http.c and
 * ch_ddl.c only. */
#include <errno.h>
#include <stdint.h>

#include "store/clickhouse/ch_ddl.h"
#include "store/clickhouse/ch_internal.h"

/* The partitions (days) of one table whose every bucket ends at or before cutoff, on every
 * shard: on a cluster, the shards' own tables ({local}), dropped on every replica. */
int ch_drop_days(struct ch_client *c, const char *table, int64_t cutoff, int64_t *rows_dropped)
{
	struct ch_buf sql = {0}, out = {0};
	uint32_t day, rows;
	int rc;

	ch_buf__printf(&sql,
		       "SELECT toUInt32(partition), toUInt32(sum(rows)) FROM {parts}"
		       " WHERE database = '{db}' AND table = '%s{local}' AND active"
		       " AND toUInt32(partition) < %lld GROUP BY partition FORMAT RowBinary",
		       table, (long long)(cutoff / DAY));
	rc = sql.oom ? -ENOMEM : ch_client__run_template(c, sql.data, &out, NULL, 0);
	while (!rc && out.pos < out.len) {
		rc = ch_buf__get_u32(&out, &day) ?: ch_buf__get_u32(&out, &rows);
		if (rc)
			break;
		ch_buf__reset(&sql);
		ch_buf__printf(&sql, "ALTER TABLE {db}.%s{local}{on_cluster} DROP PARTITION %u",
			       table, day);
		rc = sql.oom ? -ENOMEM : ch_client__run_template(c, sql.data, NULL, NULL, 0);
		if (!rc && rows_dropped)
			*rows_dropped += rows;
	}
	ch_buf__release(&sql);
	ch_buf__release(&out);
	return rc;
}
