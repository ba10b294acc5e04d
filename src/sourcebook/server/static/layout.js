// A small force-directed layout for the graph view: every pair of nodes repels, every edge is a
// spring, a weak pull keeps the parts together, and nodes do not overlap. Deterministic (the
// start is a spiral by rank, not random), so the same graph is always drawn the same way.
// O(n²) per step: fine for the few hundred nodes the view draws.

const REPULSION = 80;       // strength of the pairwise push
const SPRING = 0.08;        // how hard an edge pulls towards its rest length
const GRAVITY = 0.04;       // pull towards the centre (keeps unconnected nodes near)
const DAMPING = 0.6;        // velocity kept per step

/**
 * Positions for `nodes` ({id, r}) linked by `edges` ({source, target} ids): sets node.x, node.y.
 * Returns the nodes. `iterations` steps with a cooling factor from 1 to about 0.
 */
export function forceLayout(nodes, edges, iterations = 300) {
  const index = new Map(nodes.map((node, i) => [node.id, i]));
  const links = edges
    .map((e) => [index.get(e.source), index.get(e.target)])
    .filter(([a, b]) => a !== undefined && b !== undefined && a !== b);
  const degree = new Array(nodes.length).fill(0);
  for (const [a, b] of links) { degree[a]++; degree[b]++; }
  nodes.forEach((node, i) => {  // golden-angle spiral, the most mentioned in the middle
    const radius = 12 * Math.sqrt(i + 0.5);
    node.x = radius * Math.cos(i * 2.399963);
    node.y = radius * Math.sin(i * 2.399963);
    node.vx = 0;
    node.vy = 0;
  });
  for (let step = 0; step < iterations; step++) {
    const alpha = 1 - step / iterations;
    for (let i = 0; i < nodes.length; i++) {
      const a = nodes[i];
      for (let j = i + 1; j < nodes.length; j++) {
        const b = nodes[j];
        let dx = b.x - a.x;
        let dy = b.y - a.y;
        let d2 = dx * dx + dy * dy;
        if (d2 < 0.01) { dx = 0.1 * ((i % 3) - 1) || 0.1; dy = 0.1; d2 = dx * dx + dy * dy; }
        const d = Math.sqrt(d2);
        let push = (REPULSION * alpha) / d2;
        const gap = a.r + b.r + 4 - d;
        if (gap > 0) push += (gap / d) * 0.5;  // overlapping: push apart
        a.vx -= dx * push; a.vy -= dy * push;
        b.vx += dx * push; b.vy += dy * push;
      }
    }
    for (const [i, j] of links) {
      const a = nodes[i];
      const b = nodes[j];
      const dx = b.x - a.x;
      const dy = b.y - a.y;
      const d = Math.sqrt(dx * dx + dy * dy) || 1;
      const rest = 40 + a.r + b.r;
      const pull = ((d - rest) / d) * SPRING * alpha / Math.min(degree[i], degree[j]);
      a.vx += dx * pull; a.vy += dy * pull;
      b.vx -= dx * pull; b.vy -= dy * pull;
    }
    for (const node of nodes) {
      node.vx = (node.vx - node.x * GRAVITY * alpha) * DAMPING;
      node.vy = (node.vy - node.y * GRAVITY * alpha) * DAMPING;
      node.x += node.vx;
      node.y += node.vy;
    }
  }
  return nodes;
}
