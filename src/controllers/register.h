#pragma once
namespace kcm::controllers {
// Attaches the init functions of implemented controllers to the descriptor table. Call once at start-up.
void registerControllerInitFuncs();
}  // namespace kcm::controllers
