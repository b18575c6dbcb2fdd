#!/bin/sh
# Stands in for any agent script: echoes its stdin, then exits with the code given ($1).
cat
echo "note: ran as $HARNESS_ROLE for ${FEATURE_ID:-no feature}"
exit "${1:-0}"
