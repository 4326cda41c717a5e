#!/usr/bin/env python3
"""Renders every chat template over every conversation with Jinja2 itself, in the
environment transformers compiles chat templates in, for tests/tokenizer/compare.c.

    python3 oracle/tokenizer/jinja2_oracle.py OUT_DIR CONVERSATIONS_JSON NAME=TOKENIZER_DIR...

Writes OUT_DIR/NAME.jinja2.json: a list of {template, conversation,
add_generation_prompt, rendered | error}. @huggingface/jinja (oracle.mjs) is a port;
this is the engine transformers runs (Debian's python3-jinja2), set up as
transformers' utils/chat_template_utils.py _compile_jinja_template does (transformers
4.45 to 5.x): ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[loopcontrols]); tojson as json.dumps(x, ensure_ascii=False, indent,
separators, sort_keys); raise_exception raises TemplateError; strftime_now formats
datetime.now(). The variables are apply_chat_template's: messages, tools=None,
documents=None, add_generation_prompt, the special tokens the config sets, then the
conversation's own variables. {% generation %} blocks (transformers' AssistantTracker)
render their body.
"""
import json
import os
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Generation(Extension):
    """{% generation %}...{% endgeneration %}: the body, rendered as is."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


def token_string(value):
    if isinstance(value, dict):
        return value.get("content")
    return value if isinstance(value, str) else None


def templates_of(config):
    t = config.get("chat_template")
    if isinstance(t, str):
        return [("default", t)]
    if isinstance(t, list):
        return [(e["name"], e["template"]) for e in t]
    return []


def main():
    out_dir, conversations_path, *specs = sys.argv[1:]
    with open(conversations_path, encoding="utf-8") as f:
        conversations = json.load(f)
    env = environment()
    os.makedirs(out_dir, exist_ok=True)
    for spec in specs:
        name, folder = spec.split("=", 1)
        path = os.path.join(folder, "tokenizer_config.json")
        config = {}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                config = json.load(f)
        renders = []
        for template_name, source in templates_of(config):
            template = env.from_string(source)
            for conv in conversations:
                for add_generation_prompt in (False, True):
                    variables = {"messages": conv["messages"], "tools": None, "documents": None,
                                 "add_generation_prompt": add_generation_prompt}
                    for key in ("bos_token", "eos_token"):
                        value = token_string(config.get(key))
                        if value is not None:
                            variables[key] = value
                    variables.update(conv.get("variables", {}))
                    entry = {"template": template_name, "conversation": conv["name"],
                             "add_generation_prompt": add_generation_prompt}
                    try:
                        entry["rendered"] = template.render(**variables)
                    except jinja2.exceptions.TemplateError as e:
                        entry["error"] = str(e)
                    renders.append(entry)
        with open(os.path.join(out_dir, f"{name}.jinja2.json"), "w", encoding="utf-8") as f:
            json.dump({"tokenizer": name, "oracle": f"Jinja2 {jinja2.__version__}",
                       "chat": renders}, f, ensure_ascii=False)
        print(f"oracle: {name}: {len(renders)} Jinja2 renders")


if __name__ == "__main__":
    main()
