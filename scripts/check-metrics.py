#!/usr/bin/env python3
"""Checks a /metrics scrape with prometheus-client's text parser: it parses, every family
has HELP and TYPE, names follow Prometheus conventions, and label values are bounded (no
key, path or query). Usage: check-metrics.py URL"""
import re
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
problems = []
helped = set(re.findall(r"^# HELP (\S+) ", text, re.M))
typed = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
families = list(text_string_to_metric_families(text))
if not families:
    problems.append("no metric families")
for family in families:
    exposed = family.name + ("_total" if family.type == "counter" else "")
    if exposed not in helped or not family.documentation:
        problems.append(f"{exposed}: no HELP")
    if exposed not in typed:
        problems.append(f"{exposed}: no TYPE")
    if not exposed.startswith("larder_"):
        problems.append(f"{exposed}: not in the larder_ namespace")
    if family.type == "histogram" and not exposed.endswith("_seconds"):
        problems.append(f"{exposed}: a duration histogram must be in _seconds")
    for sample in family.samples:
        for name, value in sample.labels.items():
            if name == "route" and not (value.startswith("/") or value in ("pass-through", "other")):
                problems.append(f"{exposed}: route label {value!r}")
            if "?" in value or len(value) > 64:
                problems.append(f"{exposed}: unbounded-looking label {name}={value!r}")
for name in ("larder_build_info", "larder_cache_limit_bytes", "larder_http_request_duration_seconds",
             "larder_http_requests_total", "larder_cache_lookups_total"):
    if name not in typed:
        problems.append(f"{name}: missing")
if problems:
    print("metrics problems:\n  " + "\n  ".join(problems))
    sys.exit(1)
print(f"metrics: {len(families)} families parse, each with HELP and TYPE, labels bounded")
