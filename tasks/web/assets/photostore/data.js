// Mock catalogue: prices in dollars for the two licenses; pictures are CSS gradients.
window.PHOTOS = [
  { id: "harbour", name: "Harbour at dawn", by: "Mira Holt", tags: ["nature", "water"],
    standard: 19, extended: 79, picture: "linear-gradient(#f6c28b, #5b7db1 60%, #2c3e63)" },
  { id: "rain", name: "City rain", by: "Jon Park", tags: ["urban"],
    standard: 25, extended: 99, picture: "linear-gradient(135deg, #39424e, #7d8a99 50%, #c8d1db)" },
  { id: "lake", name: "Alpine lake", by: "Mira Holt", tags: ["nature", "water"],
    standard: 22, extended: 89, picture: "linear-gradient(#dfe9f3, #7fb3d5 45%, #2e6e55)" },
  { id: "market", name: "Night market", by: "Lea Ruiz", tags: ["urban", "food"],
    standard: 29, extended: 119, picture: "radial-gradient(circle at 30% 40%, #ffcf5c, #c0392b 40%, #1b1b2f)" },
  { id: "desert", name: "Desert road", by: "Sam Okoro", tags: ["nature", "travel"],
    standard: 15, extended: 69, picture: "linear-gradient(#87ceeb, #f0d9a7 55%, #c78c4a)" },
  { id: "coffee", name: "Coffee still life", by: "Lea Ruiz", tags: ["food"],
    standard: 12, extended: 49, picture: "radial-gradient(circle at 50% 55%, #3b2416 25%, #c9a27e 26%, #efe6dc 60%)" },
];
