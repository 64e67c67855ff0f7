"""One-off diagnostic scenes (not registered in the package): balance x10 reward, balance with 300-step episodes,
balance x5 reward with 200-step episodes, x20 with 150-step ones."""
import sys
from mlagents_plugins.envs import scenes as S
from mlagents_plugins.envs.scenes.variants import VariantSpec, make_variant, TUNING
extra = {
    "probe_bal_x10": VariantSpec("probe_bal_x10", "ProbeBalX10", "balance", TUNING, threshold=50.0, reward_scale=10.0),
    "probe_bal_long": VariantSpec("probe_bal_long", "ProbeBalLong", "balance", TUNING, threshold=15.0, max_episode_steps=300),
    "probe_bal_x5_200": VariantSpec("probe_bal_x5_200", "ProbeBalX5L200", "balance", TUNING, threshold=50.0,
                                    reward_scale=5.0, max_episode_steps=200),
    "probe_bal_x20_150": VariantSpec("probe_bal_x20_150", "ProbeBalX20L150", "balance", TUNING, threshold=150.0,
                                     reward_scale=20.0, max_episode_steps=150),
}
for name, spec in extra.items():
    S.ALL_SCENES[name] = make_variant(spec, S.SCENES[spec.base])
    S.SPLIT[name] = TUNING
from bench.holding import main
main(sys.argv[1:])
