#!/usr/bin/env bash
# Builds the zip to upload as a Gradescope programming assignment's autograder: setup.sh and
# run_autograder at its root (Gradescope looks for them there), your roster, and the course as
# committed (git archive HEAD) in course/.
#   crates/course/instructor-kit/gradescope/make-autograder-zip.sh ROSTER.csv OUT.zip
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 ROSTER.csv OUT.zip (ROSTER.csv: a header line course_id,email,gradescope_id, then one row per learner)" >&2
  exit 2
fi
roster=$1
out=$(realpath -m "$2")
kit=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$kit" rev-parse --show-toplevel)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp "$kit/setup.sh" "$kit/run_autograder" "$stage/"
cp "$roster" "$stage/roster.csv"
mkdir "$stage/course"
git -C "$repo" archive HEAD | tar -x -C "$stage/course"
(cd "$stage" && python3 -m zipfile -c "$out" setup.sh run_autograder roster.csv course)
echo "Wrote $out: upload it as the assignment's autograder (Configure Autograder, Zip file upload)."
