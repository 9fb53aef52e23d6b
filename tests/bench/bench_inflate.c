/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER benchmark. */
#include <stdio.h>
int main(void)
{
	puts("not implemented");
	return 0;
}
