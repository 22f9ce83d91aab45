"""Pure functions on traces (numpy in, numpy out): head metrics, similarity, rollout, ablation effects.

Nothing here imports torch or streamlit unless a function needs a model (ablation).
"""
