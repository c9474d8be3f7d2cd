//! `manifests/cluster-network-01-crd.yml`: the CustomResourceDefinition of
//! `networks.config.openshift.io`, written by openshift-install up to 4.15
//! (openshift/installer `data/data/manifests/` and its git history). This schema
//! is our own description of the Network config API fields the installer sets
//! (openshift/api config/v1 types_network.go), not a copy of the upstream CRD.

/// The CRD text (YAML, apiextensions.k8s.io/v1).
pub(crate) const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
    include.release.openshift.io/self-managed-high-availability: "true"
    include.release.openshift.io/single-node-developer: "true"
  name: networks.config.openshift.io
spec:
  group: config.openshift.io
  names:
    kind: Network
    listKind: NetworkList
    plural: networks
    singular: network
  preserveUnknownFields: false
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    schema:
      openAPIV3Schema:
        description: Network holds cluster-wide information about the pod, service and machine networks. The canonical name is `cluster`.
        type: object
        required:
        - spec
        properties:
          apiVersion:
            type: string
          kind:
            type: string
          metadata:
            type: object
          spec:
            description: The desired network configuration, read by the cluster network operator at install time.
            type: object
            properties:
              clusterNetwork:
                description: IP address pools for pods; each node gets a subnet of hostPrefix bits from one pool.
                type: array
                items:
                  type: object
                  properties:
                    cidr:
                      type: string
                    hostPrefix:
                      type: integer
                      format: int32
                      minimum: 0
              externalIP:
                description: Which external IPs services may use.
                type: object
                properties:
                  autoAssignCIDRs:
                    type: array
                    items:
                      type: string
                  policy:
                    type: object
                    properties:
                      allowedCIDRs:
                        type: array
                        items:
                          type: string
                      rejectedCIDRs:
                        type: array
                        items:
                          type: string
              networkType:
                description: The network plugin, e.g. OVNKubernetes.
                type: string
              serviceNetwork:
                description: IP address pools for services (one per address family).
                type: array
                items:
                  type: string
              serviceNodePortRange:
                description: The port range allowed for NodePort services, e.g. 30000-32767.
                type: string
          status:
            description: The observed network configuration, written by the network operator.
            type: object
            properties:
              clusterNetwork:
                type: array
                items:
                  type: object
                  properties:
                    cidr:
                      type: string
                    hostPrefix:
                      type: integer
                      format: int32
                      minimum: 0
              clusterNetworkMTU:
                type: integer
              migration:
                type: object
                x-kubernetes-preserve-unknown-fields: true
              networkType:
                type: string
              serviceNetwork:
                type: array
                items:
                  type: string
"#;
