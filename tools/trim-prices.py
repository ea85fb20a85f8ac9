#!/usr/bin/env python3
"""Trims LiteLLM's model_prices_and_context_window JSON to the models the supported agents use
(Claude Code, Codex, pi, Gemini CLI, Copilot CLI, OpenCode, Qwen Code, Kimi Code) and the fields
agentlog prices with. Usage: tools/trim-prices.py IN.json > src/transcript/price/litellm.json
"""
import json
import sys

# Model names (after any provider prefix) the agents use.
FAMILIES = ("claude-", "gpt-4.1", "gpt-4o", "gpt-5", "o1", "o3", "o4-", "codex-", "gemini-",
            "qwen", "kimi-", "moonshot-", "glm-", "deepseek-", "grok-")
# Provider prefixes kept (bare names first; these prefixes are what the agents write).
PREFIXES = ("", "anthropic/", "openai/", "gemini/", "github_copilot/", "moonshot/",
            "dashscope/", "deepseek/", "xai/", "zai/")
FIELDS = ("litellm_provider", "mode", "max_input_tokens", "max_output_tokens",
          "input_cost_per_token", "output_cost_per_token",
          "cache_creation_input_token_cost", "cache_creation_input_token_cost_above_1hr",
          "cache_read_input_token_cost",
          "input_cost_per_token_above_200k_tokens", "output_cost_per_token_above_200k_tokens",
          "cache_creation_input_token_cost_above_200k_tokens",
          "cache_creation_input_token_cost_above_1hr_above_200k_tokens",
          "cache_read_input_token_cost_above_200k_tokens")


def keep(key):
    for p in PREFIXES:
        if p and not key.startswith(p):
            continue
        rest = key[len(p):]
        if "/" in rest:
            continue
        if rest.startswith(FAMILIES):
            return True
    return False


def main():
    table = json.load(open(sys.argv[1]))
    out = {}
    for key in sorted(table):
        value = table[key]
        if not isinstance(value, dict) or not keep(key):
            continue
        if value.get("mode") not in (None, "chat", "responses", "completion"):
            continue
        if "input_cost_per_token" not in value:
            continue
        out[key] = {f: value[f] for f in FIELDS if f in value}
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
