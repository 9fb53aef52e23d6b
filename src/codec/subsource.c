/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: filled in by its module owner. */
typedef int af_placeholder_subsource;
