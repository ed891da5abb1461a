# vap-status: ValidatingAdmissionPolicies type-checked by validatingadmissionpolicy-status-controller: upstream's
# e2e cases (a correct policy and a type-confused one for Deployments, the same for a CRD's CronTabs with a field
# it lacks), and expressions over nested schemas (containers, labels, int-or-string and Quantity fields, timestamps),
# macros (sortBy, optMap, optFlatMap too), optional selection, variables, a ConfigMap paramKind, request/namespaceObject/authorizer, two kinds at
# once, a wildcard rule (nothing to check), an unserved resource, and a policy updated to generation 2.
CONTROLLERS="validatingadmissionpolicy-status-controller"
GROUP="diff.vap.kcm.example.com"
POLICIES=(correct confused crd-correct crd-confused nested variables-params context two-kinds wildcard unserved updated)
DUMP_EXTRA=()
for p in "${POLICIES[@]}"; do DUMP_EXTRA+=("default:validatingadmissionpolicies/${p}.kcm.example.com"); done
policy() {  # policy NAME GROUPS RESOURCES VALIDATIONS [EXTRA_SPEC_MEMBERS]
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"$1.kcm.example.com"},
 "spec":{${5:-}"matchConstraints":{"resourceRules":[{"apiGroups":$2,"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":$3}]},
  "validations":$4}}
JSON
}
checked() {  # checked NAME GENERATION: status.observedGeneration reached GENERATION
  [ "$(kubectl get validatingadmissionpolicy "$1.kcm.example.com" -o 'jsonpath={.status.observedGeneration}')" = "$2" ]
}
steps() {
  kubectl apply -f - >/dev/null <<JSON
{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.${GROUP}"},
 "spec":{"group":"${GROUP}","scope":"Namespaced","names":{"plural":"crontabs","singular":"crontab","kind":"CronTab","listKind":"CronTabList"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","properties":{"cronSpec":{"type":"string"},"image":{"type":"string"},"replicas":{"type":"integer"},
      "port":{"x-kubernetes-int-or-string":true},"extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}}}]}}
JSON
  wait_until 60 kubectl get --raw "/openapi/v3/apis/${GROUP}/v1"
  policy correct '["apps"]' '["deployments"]' '[{"expression":"object.spec.replicas > 1"}]'
  policy confused '["apps"]' '["deployments"]' \
    '[{"expression":"object.spec.replicas > '"'1'"'","messageExpression":"'"'wants replicas > 1, got '"' + object.spec.replicas"}]'
  policy crd-correct "[\"${GROUP}\"]" '["crontabs"]' '[{"expression":"object.spec.replicas > 1"}]'
  policy crd-confused "[\"${GROUP}\"]" '["crontabs"]' \
    '[{"expression":"object.spec.replicas > '"'1'"'"},{"expression":"object.spec.maxRetries < 10"},{"expression":"object.spec.port == 80 && object.spec.extra.anything == 1 && object.metadata.name == object.spec.cronSpec"}]'
  policy nested '["apps"]' '["deployments"]' '[
    {"expression":"object.spec.template.spec.containers.all(c, c.resources.limits[\"cpu\"] == \"1\")"},
    {"expression":"object.spec.template.spec.containers.map(c, c.name).exists(n, n == object.spec)"},
    {"expression":"object.metadata.labels.exists(k, v, k == v) && object.spec.minReadySeconds + 1.0 > 0"},
    {"expression":"object.spec.strategy.rollingUpdate.maxSurge == 1 && object.metadata.creationTimestamp > timestamp(\"2020-01-01T00:00:00Z\")"},
    {"expression":"has(object.spec.template.metadata.labels) && object.spec.selector.matchLabels.size() > object.spec.paused"},
    {"expression":"object.spec.template.spec.containers.exists_one(c, c.ports.all(p, p.containerPort > 1024 && p.protocol == 1))"},
    {"expression":"object.?spec.?replicas.orValue(1) > 0 && [object.spec.replicas, object.metadata.name].size() > 0"},
    {"expression":"[object.spec.strategy.rollingUpdate.maxSurge, object.spec.replicas].size() > 0 && \"%s %s\".format([object.spec.strategy.rollingUpdate.maxSurge, object.spec.replicas]) != \"\""},
    {"expression":"object.spec.template.spec.containers.sortBy(c, c.name)[0].image == 1"},
    {"expression":"object.?spec.?replicas.optMap(r, r + \"x\").hasValue() && object.?spec.optFlatMap(s, s.?paused).orValue(1) == 1"}]'
  policy variables-params '["apps"]' '["deployments"]' '[
    {"expression":"variables.replicas <= int(params.data.max)"},
    {"expression":"variables.names.all(n, n.startsWith(params.data.prefix)) && variables.replicas.size() > 0"},
    {"expression":"params.data.max > \"1\"","messageExpression":"\"max \" + params.data"}]' \
    '"paramKind":{"apiVersion":"v1","kind":"ConfigMap"},"variables":[{"name":"replicas","expression":"object.spec.replicas"},{"name":"names","expression":"object.spec.template.spec.containers.map(c, c.name)"}],'
  policy context '[""]' '["pods"]' '[
    {"expression":"request.userInfo.username == object.spec.nodeName && request.dryRun == object.spec.hostNetwork"},
    {"expression":"namespaceObject.metadata.labels[\"team\"] == object.metadata.labels[\"team\"] && namespaceObject.metadata.generation == object.spec.priority && namespaceObject.status.phase == object.spec.priority"},
    {"expression":"authorizer.group(\"\").resource(\"pods\").namespace(object.metadata.namespace).check(\"get\").allowed() && object.spec.hostname == authorizer.path(\"/healthz\").check(\"get\").allowed()"},
    {"expression":"object.spec.containers.all(c, c.image.matches(\"^registry\\\\.k8s\\\\.io/\") && c.name.split(\"-\").size() < c.name)"}]'
  policy two-kinds '["apps"]' '["deployments","replicasets","statefulsets"]' '[{"expression":"object.spec.replicas == true"},{"expression":"object.spec.minReadySeconds >= 0"}]'
  policy wildcard '["*"]' '["*"]' '[{"expression":"object.spec.replicas > '"'1'"'"}]'
  policy unserved "[\"nothing.${GROUP}\"]" '["things"]' '[{"expression":"object.spec.replicas > '"'1'"'"}]'
  policy updated '["apps"]' '["deployments"]' '[{"expression":"object.spec.replicas > 1"}]'
  for p in "${POLICIES[@]}"; do wait_until 60 checked "$p" 1; done
  policy updated '["apps"]' '["deployments"]' '[{"expression":"object.spec.replicas > 1"},{"expression":"object.spec.paused + 1 == 2"}]'
  wait_until 60 checked updated 2
  settle 2
}
