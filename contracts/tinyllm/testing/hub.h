/* tinyllm/testing/hub.h: the fake Hugging Face Hub, for tests of a
 * downloader (L7.9). Student tests may include it like any contract header.
 *
 * It starts a Hub and its CDN on 127.0.0.1 inside the test process, serves
 * the files you add, injects the faults you choose (a dropped connection, a
 * flipped byte, a server that ignores Range, ...) and logs every request.
 * The API and its documentation live in tools/hub/hub.h (this header only
 * makes it reachable from contracts/); the library links into every test of
 * a lesson whose lesson.json lists it in "link".
 */
#ifndef TINYLLM_TESTING_HUB_H
#define TINYLLM_TESTING_HUB_H

#include "../../../tools/hub/hub.h"

#endif
