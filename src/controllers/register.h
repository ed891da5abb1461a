#pragma once
#include "base/status.h"

namespace kcm::controllers {
// Attaches the init functions of implemented controllers to the descriptor table. Call once at start-up.
// Fails (naming it) when an init function is registered under a name the table does not have.
Status registerControllerInitFuncs();
}  // namespace kcm::controllers
