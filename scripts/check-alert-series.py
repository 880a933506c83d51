#!/usr/bin/env python3
"""Checks that every series an alert rule reads is exported by a Larder that has answered
nothing yet: a counter that first appears at 1 shows `increase()` and `rate()` no change,
so an alert on it would miss the process's first event. For each `larder_…` selector in
each rule's expression, at least one series of the scrape must match its label matchers.
Usage: check-alert-series.py RULES_FILE METRICS_URL"""
import re
import sys
import urllib.request

import yaml
from prometheus_client.parser import text_string_to_metric_families

rules_file, url = sys.argv[1], sys.argv[2]
text = urllib.request.urlopen(url, timeout=10).read().decode()
samples = [s for family in text_string_to_metric_families(text) for s in family.samples]

problems = []
checked = 0
for group in yaml.safe_load(open(rules_file))["groups"]:
    for rule in group["rules"]:
        for name, matchers in re.findall(r"(larder_[a-z_]+)(?:\{([^}]*)\})?", rule["expr"]):
            wanted = re.findall(r'(\w+)\s*(=~|!=|=)\s*"([^"]*)"', matchers)
            def matches(sample):
                if sample.name != name:
                    return False
                for label, op, value in wanted:
                    have = sample.labels.get(label, "")
                    if op == "=" and have != value or op == "!=" and have == value \
                            or op == "=~" and not re.fullmatch(value, have):
                        return False
                return True
            checked += 1
            if not any(matches(s) for s in samples):
                problems.append(f"{rule['alert']}: nothing exported yet for {name}{{{matchers}}}")
if problems:
    print("alerts that would miss a first event:\n  " + "\n  ".join(problems))
    sys.exit(1)
print(f"alert series: all {checked} selectors of the alert rules have a series before the first request")
