#!/usr/bin/env bash
# Lanes of the fast-sac-gym-config-gain study (issue 56). Body in a function so edits cannot shift a running bash.
#   lanes.sh filing   : configs/gym's fast_sac as it was when issue 56 was filed (lr 3e-4, normalize false), 100k,
#                       evaluated as today (tanh(mean)): HalfCheetah-v5 seed 1, Hopper-v5 seeds 0-2
#   lanes.sh current  : configs/gym's fast_sac today (lr 1e-3, normalize), the same seeds' pair on this machine: HalfCheetah-v5 1, Hopper-v5 1
#   lanes.sh before   : the screen at c50405b (the last full one, another machine) here, on three scenes
#   lanes.sh screen-fixed : the whole screen at the probe's fix (a79e28a) here, from a worktree of it (AT_WT)
#   lanes.sh tiny-fixed : the slow tiny tests of fast_sac at the probe's fix, from the worktree AT_WT
#   lanes.sh screen   : the validation screen of fast_sac's defaults at this commit, 3 seeds
#   lanes.sh tiny     : the slow tiny learning tests of fast_sac at this commit (make test-slow -k tiny, fast_sac's)
main() {
  set -u
  local here; here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  cd "$here/../../.."
  local py=.venv/bin/python
  for lane in "$@"; do
    case "$lane" in
      filing)
        for spec in "HalfCheetah-v5 1" "Hopper-v5 0" "Hopper-v5 1" "Hopper-v5 2"; do
          set -- $spec
          $py -m bench gym --steps 100000 --jobs 1 --continue --progress-every 0 --tasks "$1" --seeds "$2" \
            --trainers fast_sac --set hyperparameters.learning_rate=0.0003 --set network_settings.normalize=false \
            --out "$here/filing" || echo "[lanes] filing $spec rc $?"
        done ;;
      current)
        for spec in "HalfCheetah-v5 1" "Hopper-v5 1"; do
          set -- $spec
          $py -m bench gym --steps 100000 --jobs 1 --continue --progress-every 0 --tasks "$1" --seeds "$2" \
            --trainers fast_sac --out "$here/current" || echo "[lanes] current $spec rc $?"
        done ;;
      before)
        # the last full screen's commit (fast-sac-network-2026-11-30, c50405b, another machine kind) on this machine,
        # the scenes whose finals came out lower today: a worktree at c50405b (git worktree add --detach WT c50405b)
        (cd "${BEFORE_WT:-/work/wt-before}" && PYTHONPATH="$PWD" "$OLDPWD/$py" -m bench defaults --screen \
          --trainers fast_sac --seeds 3 --jobs 1 --scenes branches_short balance_distractors balance_big_reward_long \
          --out "$here/screen-c50405b") || echo "[lanes] before rc $?" ;;
      screen-fixed)
        # the screen again with the probe's fix (a79e28a), from a clean worktree of it (AT_WT)
        (cd "${AT_WT:-/work/wt-bisect}" && PYTHONPATH="$PWD" "$OLDPWD/$py" -m bench defaults --screen \
          --trainers fast_sac --seeds 3 --jobs 1 --out "$here/screen-fixed") || echo "[lanes] screen-fixed rc $?" ;;
      tiny-fixed)
        (cd "${AT_WT:-/work/wt-bisect}" && PYTHONPATH="$PWD" "$OLDPWD/$py" -m pytest -q -m slow tests/test_tiny_learning.py -k "fast_sac-" \
          -p no:cacheprovider --junitxml="$here/tiny-slow-fixed.xml") || echo "[lanes] tiny-fixed rc $?" ;;
      screen)
        $py -m bench defaults --screen --trainers fast_sac --seeds 3 --jobs 1 --out "$here/screen" || echo "[lanes] screen rc $?" ;;
      tiny)
        $py -m pytest -q -m slow tests/test_tiny_learning.py -k "fast_sac-" -p no:cacheprovider \
          --junitxml="$here/tiny-slow.xml" || echo "[lanes] tiny rc $?" ;;
      *) echo "unknown lane $lane"; return 2 ;;
    esac
  done
}
main "$@"; exit $?
