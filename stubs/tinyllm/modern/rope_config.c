/* RoPE scaling, the config half (L7.4): your implementation.
 *
 * The contract is contracts/tinyllm/modern/rope_scaling.h; the rules are section 2.7 of
 * the chapter (course/L7.4/README.md). Parse with cJSON (#include <cjson/cJSON.h>:
 * cJSON_ParseWithOpts, cJSON_GetObjectItemCaseSensitive, cJSON_IsNumber, cJSON_IsNull,
 * cJSON_Delete). Replace each tl_fail below, then run `ol tests L7.4`.
 */
#include "tinyllm/modern/rope_scaling.h"

const char *rope_type_name(rope_type type) {
    /* "default", "linear", "dynamic", "yarn", "longrope", "llama3"; "?" for anything else. */
    (void)type;
    tl_fail("not implemented: rope_type_name (L7.4)");
    return "?";
}

int rope_config_from_json(const char *json, RopeConfig *out) {
    /* Zero *out. Parse the text; pick the dict (rope_scaling when it is a non-empty
     * object, else rope_parameters); the type from "rope_type", else "type"; rope_theta
     * from the dict, else the top level, else the default; then each type's keys, and
     * refuse what the contract lists, naming the key and the rope type. */
    (void)json; (void)out;
    return tl_fail_status("not implemented: rope_config_from_json (L7.4)");
}
