#!/bin/sh
# Wait until the study $LPSTUDY_STUDY exists in $LPSTUDY_STORAGE, then exit 0: the workers' init
# container, while the creator (the Job lpstudy-create-study) may still be at work.
#
#   LPSTUDY_STUDY=lp-search LPSTUDY_STORAGE=... LPSTUDY_WAIT_FOR_SPEC_S=900 sh wait-for-study.sh
#   ... sh wait-for-study.sh --check     # its settings only (exit 2 with one line for a wrong one)
#
# Each try that finds no study prints why (`lpstudy status` says it). After $LPSTUDY_WAIT_FOR_SPEC_S
# seconds (default 900) it gives up with one line and exit status 1: a creator that failed must not
# keep a GPU and its queue's quota held by a pod that waits for ever. SIGTERM ends the wait at once
# (exit 143): a container's first process gets no default signal handling, so without the trap a
# deleted pod would sit out its whole grace period.
set -u
trap 'exit 143' TERM INT
budget="${LPSTUDY_WAIT_FOR_SPEC_S:-900}"
case "$budget" in
  ''|*[!0-9]*) echo "wait-for-study: LPSTUDY_WAIT_FOR_SPEC_S must be a whole number of seconds, not '$budget'" >&2
               exit 2 ;;
esac
if [ -z "${LPSTUDY_STUDY:-}" ] || [ -z "${LPSTUDY_STORAGE:-}" ]; then
  echo "wait-for-study: set LPSTUDY_STUDY and LPSTUDY_STORAGE" >&2
  exit 2
fi
if [ "${1:-}" = "--check" ]; then   # the settings only: nothing connects
  echo "wait-for-study --check: ok · study $LPSTUDY_STUDY · up to $budget s"
  exit 0
fi
deadline=$(( $(date +%s) + budget ))
until lpstudy status --study "$LPSTUDY_STUDY" --json > /dev/null; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "wait-for-study: no study named '$LPSTUDY_STUDY' after $budget s;" \
         "the creator's log says why: kubectl logs job/lpstudy-create-study" >&2
    exit 1
  fi
  sleep 5 &
  wait $!   # a trapped signal interrupts `wait` at once, not the 5 s sleep
done
