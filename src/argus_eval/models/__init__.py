"""Who answers: capability protocols, adapters (Hugging Face, OpenAI-compatible API, zoo) and the registry."""
