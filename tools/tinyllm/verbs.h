/* verbs.h: the verbs of the `tinyllm` command line.
 *
 * Adding a verb is one line in TINYLLM_VERBS: name, arguments, what it does.
 * Its code is `int tinyllm_<name>(int argc, char **argv)` in <name>.c, where
 * argv[0] is the verb itself. It returns the exit status: 0 done, 1 failed
 * (the reason on stderr), 2 a usage error.
 */
#ifndef TINYLLM_TOOL_VERBS_H
#define TINYLLM_TOOL_VERBS_H

#define TINYLLM_VERBS(VERB)                                                                  \
    VERB(chat, "DIR", "talk with a model: each line a user turn, the replies streamed")      \
    VERB(generate, "DIR", "greedy text from a prompt (--prompt TEXT [--chat] | --ids 1,2,3)")  \
    VERB(info, "DIR", "what a checkpoint folder is: the architecture, parameter count, dtypes") \
    VERB(inspect, "PATH", "list a checkpoint's tensors (name, dtype, shape, bytes) and metadata") \
    VERB(logits, "DIR", "the float32 logits of one sequence (--ids 1,2,3 [--out FILE])")       \
    VERB(pull, "REPO", "download a model's files from the Hub into the cache (resumed, verified)") \
    VERB(tokenize, "PATH", "encode a text into token ids (a JSON array), as tokenizer(text)") \
    VERB(detokenize, "PATH", "decode token ids (--ids 1,2,3) into text, as tokenizer.decode") \
    VERB(chat_template, "PATH", "render a conversation (--messages F.json) with the chat template")

#define TINYLLM_DECLARE_VERB(name, args, help) int tinyllm_##name(int argc, char **argv);
TINYLLM_VERBS(TINYLLM_DECLARE_VERB)
#undef TINYLLM_DECLARE_VERB

#endif
