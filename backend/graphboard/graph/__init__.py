"""The node/graph model and the hierarchy builder."""

from graphboard.graph.model import Graph, Node, NodeType, node_type_of

__all__ = ["Graph", "Node", "NodeType", "node_type_of"]
