// SPDX-License-Identifier: Apache-2.0
/* RFC 3339 times read by hand, digit by digit: exactly the grammar, no locale, no leading
 * spaces or short fields (strptime would take both). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rfc3339.h"

/* Reads exactly n digits. */
static int digits(const char **p, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -EINVAL;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*ret = v;
	return 0;
}

static int expect(const char **p, const char *chars)
{
	if (**p == '\0' || !strchr(chars, **p))
		return -EINVAL;
	(*p)++;
	return 0;
}

int rfc3339_parse(const char *s, int64_t *ret_unix_s)
{
	struct tm tm = {0};
	int year, mon, day, hour, min, sec, off_h = 0, off_m = 0, sign = 0;
	const char *p = s;

	if (digits(&p, 4, &year) || expect(&p, "-") || digits(&p, 2, &mon) || expect(&p, "-") ||
	    digits(&p, 2, &day) || expect(&p, "Tt ") || digits(&p, 2, &hour) || expect(&p, ":") ||
	    digits(&p, 2, &min) || expect(&p, ":") || digits(&p, 2, &sec))
		return -EINVAL;
	if (*p == '.') { /* fractional seconds: ignored, reads are per second */
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '+' ? 1 : -1;
		p++;
		if (digits(&p, 2, &off_h) || expect(&p, ":") || digits(&p, 2, &off_m))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p != '\0' || mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 ||
	    sec > 60 || off_h > 23 || off_m > 59)
		return -EINVAL;
	tm.tm_year = year - 1900;
	tm.tm_mon = mon - 1;
	tm.tm_mday = day;
	tm.tm_hour = hour;
	tm.tm_min = min;
	tm.tm_sec = sec;
	*ret_unix_s = (int64_t)timegm(&tm) - sign * (off_h * 3600 + off_m * 60);
	return 0;
}

int time_text_parse(const char *s, int64_t *ret_unix_s)
{
	char *end;
	long long v;

	if (!s || !*s)
		return -EINVAL;
	if (isdigit((unsigned char)s[0]) && !strchr(s, '-') && !strchr(s, ':')) {
		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno || *end != '\0' || v < 0 || v > 253402300799LL) /* year 9999 */
			return -EINVAL;
		*ret_unix_s = v;
		return 0;
	}
	return rfc3339_parse(s, ret_unix_s);
}
