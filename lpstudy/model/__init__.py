"""The model: Lp normalisation (lpnorm), the Lp-QKNorm attention (attention) and the GPT around it
(gpt, nanoGPT's shape). Imports torch; nothing on the read side imports this package."""
